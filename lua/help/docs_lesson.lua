-- lua/help/docs_lesson.lua - module "mha.docs_lesson": the help entries for the lesson runner
-- (the lesson format, answering exercises, the stepping commands), merged by the REPL's help with
-- every mha.docs_*.

local D, entry = require("mha.help.entry").book()

entry("lesson", nil,
    "return lesson{name=, seed=, title={en=,zh=}, summary={en=,zh=}, step{...}, exercise{...}, ...}",
    "A lesson file lessons/NN_name.lua returns one lesson: its steps in order. lesson, step, "
    .. "exercise and mistake are in scope while the file loads. Every text exists in English and "
    .. "Chinese (the runner refuses a lesson with a missing language). seed is given to mha.seed "
    .. "at the start and before every replay, so the numbers are the same every time. Step code "
    .. "runs in the REPL's global environment: what it defines (Q, K, weights ...) stays in scope "
    .. "at the prompt between steps.",
    nil,
    'print(require("mha.lesson").find("tour").path)')
entry("step", nil,
    "step{title={en=,zh=}, text={en=[[...]], zh=[[...]]}, code=[[ Lua ]]}",
    "One cell: a title (shown as 'step k/N: title'), a text and code that is echoed, then run. "
    .. "Text markup: a blank line starts a paragraph; paragraphs are wrapped to the terminal by "
    .. "display width (at most 100 columns; Chinese breaks between characters, never before closing "
    .. "punctuation; a word is never split); '# heading'; '- item'; a line indented by two or more "
    .. "spaces is kept as written while it fits (formulas such as softmax(Q·Kᵀ/√d_k)·V, tables), "
    .. "and wider it wraps under its last column; `code` keeps its backticks; *emphasis* is bold on "
    .. "a colour terminal and plain elsewhere. Echoed code lines too wide wrap behind '  │   '. "
    .. "Code prints its intermediates with show(t, {rows=tokens, ...}).",
    nil,
    'text = "# Scores\\n\\nEach row of *weights* sums to 1."\n'
    .. 'print(table.concat(require("mha.lesson").render(text, 40), "\\n"))')
entry("exercise", nil,
    "exercise{title=, prompt={en=,zh=}, code=[[setup]], solution=[[expr]], mistakes={...}, atol=, rtol=}",
    "Asks the student for a value: a number, a list (a shape such as {2, 4, 4}), a nested table "
    .. "or a tensor. The answer is compared with the value of `solution` (a Lua expression "
    .. "evaluated in the global environment, shown by :solution) as shape and values, within "
    .. "|got - want| <= atol + rtol·|want| (both 1e-4 unless given). A wrong answer is checked "
    .. "against each mistake in order and gets its hint; otherwise the message names the first "
    .. "differing element or the shapes. In batch mode the solution answers itself.",
    nil,
    'lessons = require("mha.lesson")\nscores = mha.tensor{{1, 2}, {3, 4}}\n'
    .. 'ex = lessons.exercise{solution = [[mha.softmax(scores, 2)]],\n'
    .. '    mistakes = {lessons.mistake.softmax_axis}}\n'
    .. 'print(lessons.check(ex, mha.softmax(scores, 1)))')
entry("mistake", nil,
    "mistake{wrong=[[expr]] | error=\"pattern\" | test=function(got, expected), hint={en=,zh=}}",
    "A classic wrong answer and what to say about it: `wrong` is an expression computing the "
    .. "wrong value (the answer matches it within the tolerance); `error` a pattern matched against "
    .. "the error raised while evaluating :answer EXPR (e.g. \"contiguous\" for view without "
    .. "contiguous); `test` any property. Built in: mistake.softmax_axis (the answer sums to 1 "
    .. "along another dim than the last) and mistake.nan_hint{hint=} (the answer has NaN).",
    nil,
    'print(require("mha.lesson").mistake.softmax_axis.hint.en)')
entry("answer", nil,
    "answer(value)   or   :answer EXPR",
    "Answers the current exercise. :answer evaluates EXPR itself, so an error in it (such as "
    .. "view on a non-contiguous tensor) is matched against the exercise's hints too. The verdict "
    .. "is 'correct' or 'not yet: ' and a hint; a malformed answer (a string, a ragged table, "
    .. "the wrong shape) gets a message and the lesson goes on; a wrong number is reported by its "
    .. "value. answer prints the verdict and returns whether it was right. :solution shows the "
    .. "lesson's own answer; Enter skips the exercise.",
    nil,
    "-- at an exercise:  answer(mha.softmax(scores, -1))")
entry(":lessons", nil,
    ":lessons",
    "Lists the lessons with their numbers and one-line summaries. Lessons are read from every "
    .. "folder of $MHA_LESSONS (':'-separated), then ./lessons or lessons/ beside the binary's "
    .. "directory; a file name met earlier wins.",
    nil,
    'require("mha.lesson").list("en")')
entry(":open", nil,
    ":open NAME|NUMBER|PATH    (mha-repl --lesson NAME|NUMBER|PATH [--batch] [--lang en|zh] [--answers FILE])",
    "Opens a lesson at step 1, from its seed, in the language of --lang (or of the last :lang), "
    .. "else MHA_LANG, else LANG (zh* gives Chinese), else English. :lang en|zh switches the open "
    .. "lesson, says so in the new language and shows the current step again in it; :text shows "
    .. "the current step again without running it. A path (with a '/' or ending in .lua) opens that "
    .. "lesson file. --answers FILE answers the exercises with FILE's lines, one Lua expression "
    .. "per attempt (batch mode). With --batch, or when not at a terminal, every "
    .. "step runs straight through, exercises answered by their own solutions, and the process "
    .. "exits 0 (1 when a step fails); the text is wrapped to $COLUMNS (else 80), so a transcript "
    .. "never depends on the terminal. A name may be the start of one lesson's name (:open flash); "
    .. "a name or number that is no lesson is an error naming the lessons there are, or those whose "
    .. "names it begins.",
    nil,
    "-- :open 2     :open dot_product     :lang zh")
entry(":next", nil,
    ":next   (or Enter on an empty line)",
    "Shows and runs the next step. Variables you changed at the prompt are used as they are: "
    .. "the lesson goes on from your state.",
    nil,
    "-- :next")
entry(":back", nil,
    ":back   :goto K   :restart   :run",
    ":goto K replays steps 1..K-1 quietly from the lesson's seed, then shows step K, so the "
    .. "state is what step K expects whatever you changed; :back is :goto to the previous step "
    .. "(from the end of the lesson, to its last step), "
    .. ":restart is :goto 1, :run runs every remaining step. A step that fails on your state stays "
    .. "unrun and says so: :goto K (K that step) rebuilds the state and runs it.",
    nil,
    "-- :goto 4")
entry("LESSON", nil,
    "LESSON.batch, LESSON.lang, LESSON.clock(), LESSON.table, LESSON.versus, LESSON.describe, LESSON.median_ms, say(text), tr{en=, zh=}",
    "What lesson code can ask: whether the lesson runs in batch mode (where output must be "
    .. "deterministic: no timings), and its language; LESSON.clock() is seconds on a wall clock "
    .. "(the REPL's monotonic clock; os.clock outside the REPL) for timing; say prints the string of that language, wrapped. "
    .. "tr{en=..., zh=...} returns the string (or table) of the lesson's language: use it for every "
    .. "label, title or format that lesson code prints, so a Chinese lesson prints no English labels; "
    .. "a tr{} of literals is resolved before a step is echoed and run, so the student reads one "
    .. "language. LESSON.table(rows, header) prints aligned columns, LESSON.versus(name, printed, "
    .. "value) a tutorial's number beside the true one, LESSON.describe(name, t) a tensor's shape, "
    .. "strides, offset and contiguity, LESSON.median_ms(fn) the median of 5 timed runs after a "
    .. "warm-up, LESSON.scratch(\".npz\") a path of its own in /tmp for a file a step writes and "
    .. "reads back, removed with the name's reservation when the program exits. The resolved code should fit 76 columns, so the echo is not wrapped at 80. "
    .. "In batch mode plot.* prints a one-line note '[plot: heatmap \"title\" 3×3]' (a heatmap is "
    .. "also drawn with mha.heat) instead of opening a window.",
    nil,
    "-- if not LESSON.batch then ... time something ... end")

return D
