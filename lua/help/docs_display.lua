-- lua/help/docs_display.lua - module "mha.docs_display": the help entries for printing
-- (mha.format, show, printoptions, heat) and plotting (plot.*), merged by the REPL's help with
-- every mha.docs_* module.

local D, entry = require("mha.help.entry").book()

entry("mha.format", "display",
    "mha.format(t [, opts]) -> string",
    "The text of a tensor (or a nested Lua table of numbers) for people: aligned, right-aligned "
    .. "columns with 4 decimals, whole numbers written as '3.', scientific notation only when the "
    .. "magnitudes demand it (decided per tensor as NumPy does), nan/inf/-inf as such, -0 as 0, "
    .. "true/false for bool tensors, and a footer '[float32 (3,4)]'. Above `threshold` elements "
    .. "only the first and last `edgeitems` of each dimension are shown, with '...'; lines wider "
    .. "than `linewidth` continue below under a 'columns k-m' marker; 3-D and 4-D tensors print "
    .. "as 2-D slices labelled '[1,:,:]', or '[head 1]' when opts.dims names the dimensions. "
    .. "opts takes every printoptions key for this call, and rows=, cols=, title=, dims= as for "
    .. "mha.show. print(t) and tostring(t) use it.",
    "scientific when, over the finite non-zero |x|: max >= 1e8 or min < 1e-4 or max/min > 1e3",
    'print(mha.format(mha.tensor{{1, 0.5}, {1e-5, 2}}))\nprint(mha.format(mha.randn(2, 3, 3), {dims = {"head", "query", "key"}}))')
entry("mha.show", "display",
    "mha.show(t [, {rows=, cols=, title=, precision=, dims=}])",
    "Prints a matrix with token labels on its rows and columns, so attention weights read as "
    .. "'which query looks at which key'. Labels are a list, or a string split on spaces, or into "
    .. "characters when it has none ('我爱你'). Columns stay aligned by display width, so Chinese "
    .. "and other wide characters (two cells each) line up. Other options as mha.format.",
    nil,
    'w = mha.softmax(mha.randn(3, 3), -1)\nmha.show(w, {rows = "The cat sat", cols = "The cat sat"})')
entry("mha.printoptions", "display",
    "mha.printoptions{precision=, threshold=, edgeitems=, linewidth=, sci_mode=, lang=} / mha.printoptions() / mha.printoptions(\"reset\")",
    "Sets how every later print looks: precision (decimals, default 4), threshold (elements "
    .. "above which a tensor is summarised, default 1000), edgeitems (items kept at each end of a "
    .. "summarised dimension, default 3), linewidth (default: the terminal's width, or 80 when "
    .. "output is not a terminal; \"auto\" restores that), sci_mode (true, false, or \"auto\" "
    .. "to let the magnitudes decide) and lang (\"en\" or \"zh\": the words a print carries, such as "
    .. "\"columns 1-6\" or \"scale:\"; a lesson sets its language). With no argument it returns the current options; "
    .. "\"reset\" restores the defaults.",
    nil,
    "mha.printoptions{precision = 2}\nprint(mha.rand(2, 2))\nmha.printoptions(\"reset\")")
entry("mha.heat", "display",
    "mha.heat(t [, {rows=, cols=, title=, zrange={lo, hi}, dims=, color=, values=, at=, window=}])",
    "Draws a matrix in the terminal as shaded cells - a quick look without gnuplot, readable on "
    .. "a light and a dark terminal alike: twelve steps from purple to yellow-green (256 colours) "
    .. "when the terminal has colour and NO_COLOR is unset, else eight bar heights '▁▂▃▄▅▆▇█', "
    .. "with a scale line underneath. The range is the finite values' min..max, or zrange. -inf (a "
    .. "masked score) takes the lowest level and nan shows as '??'. values=true writes each value "
    .. "in its cell (values=3: three decimals). 3-D tensors draw slice by slice on one shared "
    .. "scale. color=true/false forces or forbids colour. at=i, window=n show only the n positions "
    .. "that end at position i, on both axes (a long text's attention), with their labels, and say "
    .. "which positions are shown; window alone ends at the last position, at alone takes 24.",
    "x = (v - lo) / (hi - lo); level k of n covers x in [(k-1)/n, k/n) (n = 8 bars or 12 colours)",
    'w = mha.softmax(mha.randn(4, 4), -1)\nmha.heat(w, {rows = "a b c d", cols = "a b c d"})')
entry("mha.show_attention", "display",
    "mha.show_attention(weights, text [, {layer=, head=, at=, window=, plot=, title=, values=}])",
    "The attention of a model over a text, one character per row (the query) and per column (the "
    .. "key): weights is m:attention() (layer= picks one, default 1), one layer's (B,H,L,L) or "
    .. "(H,L,L), or one head's (L,L); head= picks a head, else every head is drawn. text has one "
    .. "character per position (a Chinese character is one), a space shown as ␣ and a line end as "
    .. "↵. A text longer than 32 shows the window of window (24) positions that ends at position "
    .. "at (default: the last): a causal query looks only back, so row at and every key it sees "
    .. "in the window are on screen. Prints mha.heat's shaded cells on the scale 0..1; plot = "
    .. "true draws plot.heads or plot.heatmap instead (a window, or a figure in a notebook). "
    .. "Returns nothing.",
    nil,
    'm, extra = mha.load_model("char_en")\n'
    .. 's = "And God said, Let there be light: and there was light."\n'
    .. 'mha.no_grad(function() m:forward(extra.tokenizer:encode(s):view(1, -1)) end)\n'
    .. 'mha.show_attention(m:attention(), s, {layer = 1, head = 1, window = 16})',
    {"mha.heat", "plot.heads", "mha.heads.detect"})
entry("plot.figure", nil,
    "plot.figure([{current = false}]) -> figure",
    "Makes a new figure and makes it current (current = false: a figure of its own, which "
    .. "plot.heatmap and the others leave alone, as mha.train's curves are). "
    .. "Each figure has its own gnuplot process (started "
    .. "at its first drawing, so a window keeps showing it); plot.heatmap/heads/line/bar draw on "
    .. "the current figure, and a figure has the same functions as methods (fig:heatmap(W), "
    .. "fig:save('a.png'), fig:close()). The drawing functions return nothing, so the REPL prints "
    .. "nothing after a drawing; plot.figure() and plot.current() return the figure, which prints "
    .. "as 'figure 1 (gnuplot, pid 1234)' or 'figure 1 (no gnuplot running)'. A window stays "
    .. "until it is closed (fig:close(), plot.closeall(), :close) or the REPL exits, whatever the "
    .. "collector does; a text figure's gnuplot is reaped when the figure is collected too.",
    nil,
    "f = plot.figure()\nf:line{ {y = {1, 4, 9}} }\nf:close()")
entry("plot.current", nil,
    "plot.current() -> figure",
    "The current figure; one is made on first use.",
    nil,
    "print(plot.current())")
entry("plot.close", nil,
    "plot.close([fig]) / plot.closeall()",
    "Closes a figure (default: the current one): its gnuplot ends and is reaped, its window "
    .. "goes away. plot.closeall() closes every open figure.",
    nil,
    "plot.close()\nplot.closeall()")
entry("plot.closeall", nil,
    "plot.closeall()",
    "Closes every figure and reaps every gnuplot process they started.",
    nil,
    "plot.closeall()")
entry("plot.heatmap", nil,
    "plot.heatmap(M [, {rows=, cols=, tokens=, title=, palette=, zrange={lo, hi}, values=, xlabel=, ylabel=, font=, size=, at=, window=}])",
    "Draws a matrix - typically attention weights (L,S) - as a heat map with token labels on "
    .. "both axes (tokens= sets both), row 1 at the top as it prints; at=, window= draw the window "
    .. "of positions that mha.heat's do. palette is one of viridis "
    .. "(default), gray, hot, blues, redblue; zrange fixes the colour range; values=true writes "
    .. "each value in its cell (values=3: three decimals). nan and +-inf cells are left blank. "
    .. "With labels on both axes it is read as attention: the axes are named query and key (in "
    .. "the lesson's language; xlabel=/ylabel= change them, \"\" removes one). font= (points) and "
    .. "size={w, h} (pixels) suit a projector; MHA_PLOT_FONT and MHA_PLOT_SIZE=WxH set them for "
    .. "every plot (a window is scaled down to fit MHA_PLOT_SIZE, default 960x680). "
    .. "On a text terminal it prints mha.heat instead; plot.save writes the real image. Returns "
    .. "nothing (plot.current() is the figure it drew on).",
    nil,
    'q = mha.randn(4, 8)\nw = mha.softmax(q:matmul(q:T()) / math.sqrt(8), -1)\nplot.heatmap(w, {tokens = "The cat sat down", values = true})\nplot.save("weights.png")')
entry("plot.heads", nil,
    "plot.heads(W [, {tokens=, rows=, cols=, title=, palette=, zrange=, values=, font=, size=, at=, window=}])",
    "Draws every head of (H,L,S) attention weights in one grid, each panel titled 'head k' "
    .. "('头 k' in a Chinese lesson), the query and key axes named, the grid fitted to the screen, "
    .. "with one colour scale shared by all heads so they can be compared. For batched (B,H,L,S) "
    .. "weights select one sequence first: W:select(1, 1). at=, window= draw the window of "
    .. "positions that mha.heat's do.",
    nil,
    'm = mha.MultiheadAttention{embed_dim = 16, num_heads = 4}\nx = mha.randn(1, 5, 16)\nout, w = m:forward(x, x, x, {average_attn_weights = false})\nplot.heads(w:select(1, 1), {tokens = "I like to learn attention"})')
entry("plot.line", nil,
    "plot.line{ {x=, y=, title=}, ..., title=, xlabel=, ylabel=, logx=, logy=, xrange={lo, hi} }",
    "Draws one or more series as lines with points and a legend. x and y are Lua arrays or 1-D "
    .. "tensors; x defaults to 1..n. A table with y= at its top level is a single series. "
    .. "logx/logy use logarithmic axes (all values must then be positive); xrange fixes the x axis "
    .. "(a curve redrawn as it grows keeps its axis). On the text (dumb) "
    .. "terminal, titles, labels and legend entries are laid out by display width, so Chinese "
    .. "text keeps the legend's box and every line as wide as the terminal.",
    nil,
    'xs, a, b = {}, {}, {}\nfor n = 1, 50 do xs[n], a[n], b[n] = n, n * n, n * math.log(n) end\nplot.line{ {x = xs, y = a, title = "n^2"},\n    {x = xs, y = b, title = "n log n"}, xlabel = "n" }')
entry("plot.bar", nil,
    "plot.bar(labels, values [, {title=, xlabel=, ylabel=}])",
    "Draws one bar per label - for instance the softmax of a row at several temperatures. "
    .. "labels is a list or a string split on spaces; values a Lua array or a 1-D tensor. The "
    .. "axis runs from 0 to a tenth past the tallest bar (and below the lowest negative one), so "
    .. "no bar touches the frame.",
    nil,
    'p = mha.softmax(mha.tensor{2, 1, 0.5}, 1)\nplot.bar("The cat sat", p, {title = "softmax"})')
entry("plot.save", nil,
    "plot.save(path [, {width=, height=}]) -> path",
    "Writes the current figure's last drawing to a .png (pngcairo), .svg or .pdf (pdfcairo) file. "
    .. "The file is complete and closed when it returns. width and height are in pixels (a PDF "
    .. "takes 100 pixels per inch).",
    nil,
    'plot.heatmap(mha.eye(3))\nplot.save("eye.svg")')
entry("plot.terminal", nil,
    "plot.terminal([name]) -> name",
    "Where figures draw: a window (qt, wxt or x11, when DISPLAY is set and gnuplot has one), "
    .. "else text in this terminal ('dumb', in colour on a colour terminal), 'sixelgd' for "
    .. "terminals that show sixel images, or 'none' (draw only when saving). The environment "
    .. "variable MHA_PLOT_TERM sets it at start; plot.terminal(name) changes it for every figure.",
    nil,
    'plot.terminal("sixelgd")\nprint(plot.terminal())')
entry("plot.terminals", nil,
    "plot.terminals() -> list",
    "The names of the terminals the installed gnuplot has (asked once per process).",
    nil,
    'print(table.concat(plot.terminals(), " "))')

return D
