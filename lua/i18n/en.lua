-- lua/i18n/en.lua - module "mha.i18n.en": every word the runner, the REPL, printing, plots,
-- notebooks and training print, in English, by room (lua/i18n/zh.lua holds the same keys in
-- Chinese).

local en = {}

-- The lesson runner (lua/lesson/lesson.lua, files.lua, pager.lua): steps, exercises, commands.
en.lesson = {
    step = "step", exercise = "Exercise", of_lesson = "lesson", colon = ":", colon_space = ": ",
    header = "step %d/%d: %s",
    quote = "\"%s\"",
    heat_dims = {"head", "query", "key"},
    ask = "Answer with answer(value) or :answer EXPR; :solution shows the lesson's own answer, Enter goes on.",
    batch_answer = "(batch mode: answered with the lesson's own solution)",
    correct = "correct", not_yet = "not yet",
    skipped = "(exercise skipped; :solution shows the answer)",
    the_end = "End of the lesson. :lessons lists the others; :restart starts this one again.",
    the_end_next = "End of the lesson. :open %d goes on to the next, \"%s\"; :lessons lists them all; "
        .. ":restart starts this one again.",
    next_hint = "Enter (or :next) runs the next step; :back, :goto K, :run, :restart.",
    no_lesson = "no lesson is open: :lessons lists them, :open NAME opens one",
    no_exercise = "there is no exercise to answer at this step",
    answer_empty = "answer(...) takes your answer: answer(0.25), answer(w) or answer({1, 2}); or :answer "
        .. "EXPR; :solution shows one",
    replaying = function(k, seed)
        return string.format("(%s run again quietly, with the lesson's random seed %d)",
                             k == 1 and "step 1" or "steps 1-" .. k, seed)
    end,
    resumed = function(n, k)
        return string.format("(lesson %d is still open at step %d: :reset ran its steps again from the start)", n, k)
    end,
    solution = "solution",
    error_in_step = "error in step %d",
    interrupted_step = "step %d stopped by Ctrl-C: Enter runs it again.",
    recover = function(k) return string.format("The lesson's variables may now be wrong for step %d: "
        .. ":goto %d rebuilds them by running the steps before it again and runs step %d; :restart "
        .. "starts the lesson over.", k, k, k) end,
    lessons = "Lessons (:open NAME or NUMBER):",
    lang_set = "Lessons are now in English.",
    lang_usage = ":lang en|zh (English or Chinese)",
    goto_range = ":goto: the step number must be between 1 and %d",
    goto_number = ":goto: '%s' is not a step number; write :goto K with K from 1 to %d",
    more = "-- more: Space next page, Enter next line, q quits --",
    answers_from = "(batch mode: answered from %s)",
    answers_none = "(no answer left in %s: answered with the lesson's own solution)",
    plot = "plot", plot_kinds = {heatmap = "heatmap", heads = "heads", line = "line", bar = "bar"},
    series = "%d series", series_n = "series %d", bars = "%d bars", list_sep = ", ",
    no_lessons = "no lessons found (looked in %s; set MHA_LESSONS)",
    no_such_lesson = "no lesson '%s'; give a number from %d to %d or a name:\n%s",
    lesson_prefix = "'%s' begins more than one lesson's name:\n%s",
    cannot_load = "(cannot load: %s)",
    open_usage = ":open NAME|NUMBER|PATH (:lessons lists them)",
}

-- The answer checker's verdicts (lua/lesson/check.lua), as string.format formats.
en.check = {
    shape = "your answer has shape %s; the expected one has shape %s",
    value = "your answer differs at %s: you have %.6g (tolerance %.0e)",
    scalar = "you gave %.6g; that is not the expected value (tolerance %.0e)",
    count = "your answer has %d number(s); the expected one has %d",
    kind = "your answer is %s; a %s is expected",
    string = "your answer is %q",
    malformed = "your answer cannot be read: %s",
    why_contains = "it contains a %s", why_ragged = "its rows have different lengths",
    why_tensor = "a tensor whose values could not be read", why_type = "a %s",
    error = "evaluating your answer failed: %s",
    nan = "your answer contains NaN (not a number) at %s",
    -- mistake.softmax_axis's hint; %LAST and %D are the dims
    softmax_axis = "your rows don't sum to 1 along dim %LAST (the keys); they sum to 1 along dim %D: softmax was "
        .. "taken over the wrong axis. Each query's weights over the keys must sum to 1: softmax(x, -1).",
}

-- The helpers lesson code calls (lua/lesson/tools.lua): LESSON.versus and LESSON.describe.
en.tools = {
    says = "tutorial: ", truth = "true: ", unprinted = "(not printed)",
    describe = "    shape (%s)  strides (%s)  offset %d  contiguous %s", yes = "true", no = "false",
}

-- The few words a printed tensor carries (lua/show/display.lua), in the printoptions' language.
en.print = {
    columns = "columns %s-%s", column = "column %s", more_columns = "columns ...", scale = "scale: ",
    rows_of = "rows 1-%d of %d", columns_of = "columns 1-%d of %d", shown = "(%s shown)", comma = ", ",
    -- mha.heat's and mha.show_attention's window (lua/show/textmap.lua)
    window = "positions %d-%d of %d", heads_title = "attention: rows = queries, columns = keys",
    head_title = "head %d: rows = queries, columns = keys",
}

-- The words a plot adds itself (lua/show/figure.lua, plot.lua): panel titles, axis labels, notes.
en.plot = {
    head = "head %d", query = "query", key = "key", dims = {"head", "query", "key"},
    not_found = "plot: gnuplot not found; install the Debian package gnuplot-nox",
    not_drawn = "plot.line: not drawn without gnuplot: ",
    blank_note = "red marks: cells without a colour (NaN = not a number, inf = infinite)",
}

-- What mha.train prints and its curves' words (lua/train/train.lua).
en.train = {
    loss = "loss", accuracy = "accuracy", step = "step", training = "training", layer = "layer %d",
    progress = "step %d/%d  %s steps/s  loss %.4f  acc %.1f%%  ETA %s",
    progress_short = "step %d/%d  loss %.4f  acc %.1f%%  ETA %s",   -- when the rate has no room
    log = "step %5d  loss %.4f  acc %5.1f%%",
    interrupted = "train: interrupted after step %d of %d; the model keeps what it learned",
    done = "done: %d steps in %s (CPU), loss %.4f, acc %.1f%%",
    -- after a writing of mha.generate that Ctrl-C stopped (lua/train/writing.lua)
    generate_stopped = function(n)
        return string.format("(stopped by Ctrl-C after %d new token%s; the text so far is returned)", n,
                             n == 1 and "" or "s")
    end,
    val = "  val loss %.4f", val_loss = "validation loss",   -- after the progress line, with val
    model = function(heads, d_model, layers)   -- the curves' title names the model: runs compare
        return string.format("training: %d head%s, d_model %d, %d layer%s", heads, heads == 1 and "" or "s",
                             d_model, layers, layers == 1 and "" or "s")
    end,
}

-- How a KV cache prints (lua/nn/cache.lua): print(model:new_cache()).
en.cache = {
    line = "KV cache: %d layers, %d tokens%s%s, %d bytes",
    window = ", window %d, sinks %d",
    heads = function(H_kv, D)
        return string.format(", %d K/V head%s of %d", H_kv, H_kv == 1 and "" or "s", D)
    end,
}

-- The head detectors' report (lua/train/heads.lua): the kinds, a layer and a head.
en.heads = {
    previous = "previous", duplicate = "duplicate", induction = "induction", layer = "layer %d",
    layer_short = "L%d: ", head = "h%d",
}

-- The REPL's hints for a student's Python habits and did-you-mean (lua/repl/habits.lua).
-- to_device, train_mode and ce_option are false: the English refusal says it already.
en.hint = {
    hint = "hint: ",
    method = "%s is the method itself; call it with a colon: %s:%s()",
    help = "help is a function: help() lists the topics, help(mha.softmax) explains one; ? lists the commands",
    quit = ":quit or Ctrl-D leaves mha-repl",
    clear = "%s is nil here: Ctrl-L clears the screen",
    clear_notebook = "%s is nil here: a notebook clears its cells' outputs from its Edit menu (Clear Outputs)",
    exit = ":quit or Ctrl-D leaves mha-repl (os.exit() too)",
    quit_notebook = "a notebook ends from its Kernel menu (Shut Down), or by closing its tab; " ..
                    "Kernel > Restart starts afresh",
    data = "there is no .data here: use %s:detach() (the same numbers, outside the graph) or %s itself",
    len = "Lua has no len(): #%s is the size of dim 1, as %s:size(1); %s:numel() counts every element",
    to_device = false, train_mode = false,
    ce_target = "classes count from 1 here; to skip the targets that are %s, give {ignore_index = %s}",
    ce_option = false,
    matmul_at = "Lua has no @ operator: the matrix product is %s:matmul(%s), or mha.matmul(%s, %s)",
    matmul_star = "* multiplies element by element (broadcasting); for the matrix product write %s:matmul(%s)",
    matmul_star_t = "* multiplies element by element (broadcasting); the matrix product that fits %s and " ..
                    "%s is %s: (%d,%d) @ (%d,%d) gives (%d,%d)",
    matmul_none = "* multiplies element by element, so the shapes must broadcast; no matrix product fits %s " ..
                  "and %s either (A:matmul(B) needs A's last size equal to B's second-to-last)",
    did_you_mean = "did you mean %s?",
    colon = "write %s",
    dangling = "a value alone (%s) is not a Lua statement: type %s on a line of its own, or print(%s)",
    dangling_any = "a value alone is not a Lua statement: type it on a line of its own, or print(...) it",
    command = "unknown command :%s (did you mean :%s?)",
    missing_arg = "%s needs argument #%s: ?%s shows what it takes",
    nil_name = "%s is nil: did you mean %s?",
    nil_global = "%s is nil: nothing has been assigned to it in this session (after :reset, run the " ..
                 "lines that make it again)",
    import = "Lua has no import: mha is already loaded, and torch's names live in mha.* " ..
             "(mha.softmax, mha.nn.Linear)",
    range = "Lua's loop is %s (both ends included)",
    range_from_one = "Lua counts from 1: %s (both ends included) runs %s over %s, the indices " ..
                     "x[%s] takes; where range(%s)'s %s are really needed, write %s - 1",
    def = "Lua's function is written %s",
    list = "Lua's lists are tables in braces: %s (mha.tensor takes one too)",
    long_string = "[[...]] is a Lua string, not a list: %s holds text now; a table of rows is %s",
    index_zero = "Lua and mha index from 1: %s[1] is the first, %s[-1] the last",
    compound = "Lua has no %s=: write %s = %s %s %s",
    not_equal = "Lua's not-equal is ~=: %s",
    comment = "Lua's comments start with --: %s",
    colon_block = "Lua's blocks take no colon: %s",
    print_call = "print is a function in Lua: print(%s)",
    keyword = "Lua has no keyword arguments: write %s (options, where a function has them, go in " ..
              "{name = value})",
    dim_zero = "dims count from 1 here: dim 1 is the first, -1 the last",
    constant = "Lua writes %s as %s: %s is an unset name here, so %s is nil",
    fstring = "Lua has no f-strings: string.format builds the text, %s",
    shape_index = "%s.shape is a method here, and dims count from 1: Python's %s.shape[%s] is %s " ..
                  "(%s:shape() is the whole shape)",
    index_zero_nil = "Lua and mha index from 1: %s[0] is nil; %s[1] is the first",
}

-- The hint line printed under an English message of the core or the helpers (lua/repl/habits.lua),
-- a format of the message pattern's captures: false where the English message says it already.
en.core = {
    interrupted = "hint: Ctrl-C stopped this input; what it did before that (an assignment, say) is kept",
    interrupted_notebook = "hint: Interrupt (■) stopped this cell; what it did before that (an assignment, "
        .. "say) is kept",
    inner_sizes = "hint: the matrix product A·B needs A's last dim to equal B's second-to-last (here %s "
        .. "and %s); perhaps one of them should be transposed first: :transpose(1, 2)",
    divisible = "hint: each head gets embed_dim/num_heads dims, so embed_dim %s must be a multiple of "
        .. "num_heads %s",
    option_did_you_mean = false, option_unknown = false, method_colon = false, view = false,
    bad_argument = false, float32_exact = false, float32_range = false, float32_small = false,
    disk_full = false, dim_largest = false, tensor_values = false, linear_in = false,
    generate_positions = false,
}

-- What the REPL's commands say (lua/repl/repl.lua).
en.repl = {
    time = "time: ", on = "on", off = "off",
    took = "time %s", hold = ", tensors hold %s",  -- :time's line after each command
    fresh = "fresh state (the history, the transcript for :save and :time are kept)",
    save_name = ":save needs a file name: :save FILE writes FILE.lua and FILE.md",
    saved = "saved %d inputs to %s and %s",
    unknown = "unknown command :%s (? lists the commands)", could_be = ":%s could be :%s",
    usage = "usage: %s   (%s)",   -- a command given arguments it does not take: its form, its help
    -- what ? prints under the commands: a key and its line
    keys = {
        {"Help:", "?name or help(f) explains a function (?mha.softmax), ?:name or :help name a command (?:save); "
                  .. "help() lists the topics"},
        {"Keys:", "Tab completes names, fields, methods (x:tra<Tab>), commands and file names in strings; "
                  .. "Up/Down and Ctrl-R search the history; Ctrl-C stops a running command or clears the line; "
                  .. "Ctrl-D on an empty line quits"},
        {"Values:", "an expression prints its value; a trailing ; hides it; _ holds the last value"},
    },
    -- each line at most 80 columns, the terminal's least width (the zh line is 70)
    banner = "%s %s (%s)\ntype ? for the commands, help() for the functions, Ctrl-D to quit",
    exported = "wrote %s to %s", exported_lesson = "lesson %s", exported_session = "the session",
    export_lesson_too = "(:export lesson FILE writes lesson %d alone, run afresh from its seed)",
    value_after = "hint: a value after statements prints when a ';' comes before it: %s",
}

-- What an export says (lua/notebook/notebook.lua, record.lua): headings, the first cell's comment,
-- failures.
en.notebook = {
    step_heading = "Step %d/%d: %s", exercise_heading = "Exercise: ",
    setup = "the lesson's language, seed, print options and helpers, as --batch sets them",
    no_name = "expected a file name ending in .ipynb or .html",
    bad_name = "'%s': the name must end in .ipynb or .html",
    not_opened = "the lesson did not open", failed = "the export failed",
    no_lesson = "no lesson is open (:open N opens one; :export FILE writes the session)",
    session = "mha-repl session", exercise = "the exercise the answers below are checked against",
    past = "the lesson past the exercise: no answer is checked against it now",
    your_answer = "put your answer in place of the lesson's solution",
}

-- What a classroom says (classroom/, lua/kernel/kernel.lua): the teacher's report, a cell's limit.
en.classroom = {
    cpu_limit = "stopped: this cell used its %g s of CPU time (MHA_CELL_SECONDS), a loop that never ends? "
        .. "The kernel and its variables are kept",
    report_title = "Answers of %d students to %d exercises (%s)",
    student = "student", right = "right", wrong = "wrong", not_yet = "not yet",
    total = "total", exercise = "lesson %d, exercise %d: %s",
    wrote_csv = "wrote %s", no_students = "no students found (roster %s)",
}

-- fill_mask's table (lua/train/mlm.lua): a block per mask marker.
en.mlm = {
    marker = "mask %d of %d (character %d): candidate, probability",
}

return en
