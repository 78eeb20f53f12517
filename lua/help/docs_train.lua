-- lua/help/docs_train.lua - module "mha.docs_train": the help entries of mha.nn.Transformer,
-- mha.tasks, mha.train, mha.heads, the shipped models (mha.load_model, mha.save_model) and real
-- text (mha.data, mha.tokenizer, mha.tasks.text, mha.tasks.masked, mha.fill_mask), read by
-- lua/help/help.lua.
--
-- Every example runs as written, also pasted into the REPL line by line
-- (tests/lua/test_display.lua): globals, never `local`, at most 76 columns a line.

local D, entry = require("mha.help.entry").book()

entry("mha.nn.Transformer", "training",
    "mha.nn.Transformer{vocab=, d_model=, heads=1, layers=1, d_ff=4*d_model, max_len=, causal=true, "
    .. "norm=\"pre\", pos=\"learned\", kv_heads=heads, rope_layout=\"half\", rope_base=10000, window=, "
    .. "sinks=0} -> model",
    "A small decoder-only transformer of the core's parts: token and position embeddings, per layer "
    .. "attention (and an MLP unless d_ff = 0) with residuals and layer norm (norm \"pre\", \"post\" or "
    .. "\"none\"), a final norm (pre) and an unembedding. model:forward(tokens) takes (N, L) or (L) "
    .. "1-based ids and returns logits (N, L, vocab); model:forward(tokens, {key_padding_mask = pad}) "
    .. "with pad (N, L) bool, true at padding (torch's), lets no query read those keys (a batch of "
    .. "unequal lines); model:attention() then gives one (N, H, L, L) "
    .. "weights tensor per layer. state_dict keys are PyTorch's (layers.0.attn.in_proj_weight). "
    .. "pos is \"learned\", \"sinusoidal\", \"rope\" (rope_layout, rope_base), \"alibi\" or \"none\"; "
    .. "kv_heads < heads shares each K/V head among heads / kv_heads query heads (1 is MQA); window = W "
    .. "lets a query see the last W keys and the first sinks. With any of these the attention is "
    .. "LLaMA's: layers.0.attn.q_proj.weight, k_proj, v_proj, o_proj, no biases. "
    .. "model:new_cache() and model:generate(prompt, opts) decode.",
    "pre: x = x + attn(ln1(x)); x = x + mlp(ln2(x));  mlp = fc2(gelu(fc1))",
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 2, max_len = 6}\n"
    .. "logits = m:forward({{1, 2, 3}})\n"
    .. "print(logits:shape(), #m:attention())",
    {"mha.train", "Transformer:generate", "Transformer:new_cache", "mha.heads.detect"})

entry("mha.tasks", "training",
    "mha.tasks.NAME{vocab=10, len=, batch=32, seed=0} -> task;  task:batch([n]) -> tokens, targets",
    "Seeded toy tasks for next-token training: copy, reverse, sort (x SEP y), match (key-value pairs, "
    .. "then a key: its value), induction (a stretch repeated at a random place, of a random length "
    .. "from repeat = {min, max}), difference (at p >= 3 the answer x(p-1) - x(p-2) on a clock of vocab: "
    .. "two tokens at once, lesson 18). targets[p] is the token that should follow position p (for "
    .. "difference: the answer at p); 0 marks positions that do not count. mha.tasks.repeated(vocab, r, "
    .. "n) gives n sequences of r random tokens said twice, the probe of the head detectors. "
    .. "mha.tasks.show(ids, {title=, zero=}) prints ids as whole numbers (zero = \"-\" for targets).",
    nil,
    "task = mha.tasks.reverse{vocab = 10, len = 3}\n"
    .. "tokens, targets = task:batch(1)\n"
    .. "mha.tasks.show(tokens)\n"
    .. "mha.tasks.show(targets, {zero = \"-\"})",
    {"mha.train", "mha.nn.Transformer"})

entry("mha.train", "training",
    "mha.train{model=, task=, steps=100, lr=1e-3, batch=, optimizer=\"adamw\", log_every=, seed=, "
    .. "clip=1.0, plot=false, attention_every=0, quiet=false, on_log=, val=, val_every=, val_batches=4, "
    .. "checkpoint=, checkpoint_every=, resume=} "
    .. "-> history",
    "Trains model on task: draws a batch, takes the cross entropy on the counted positions "
    .. "(mha.train.loss), runs backward, clips the gradient norm, steps the optimizer. At a terminal "
    .. "a progress line (step, steps/s, loss, accuracy, ETA) is rewritten in place; Ctrl-C says the step "
    .. "reached and returns the history so far, keeping the model, while a loop that calls train stops "
    .. "at its next turn, as Ctrl-C stops every loop; plot = true redraws the loss "
    .. "curve each log step. history has loss, acc and step (one row per log step), steps and seconds (CPU). "
    .. "val (a task, or a text for a mha.tasks.text task) adds the validation loss every val_every steps "
    .. "(default log_every) and at the last: the mean over val_batches batches, the same ones each time, "
    .. "shown in the progress line and kept in history.val_loss and history.val_step. checkpoint = "
    .. "\"mine.npz\" writes the model (and a text task's tokenizer, so mha.load_model reads it), the "
    .. "optimizer's state and the history every checkpoint_every steps (default log_every), at the "
    .. "last and when Ctrl-C stops the run; resume = \"mine.npz\" goes on from it to step steps "
    .. "(steps counts the steps before too), in the same model or a fresh one of the same shape.",
    nil,
    "m = mha.nn.Transformer{vocab = 6, d_model = 16, heads = 2, max_len = 6}\n"
    .. "t = mha.tasks.reverse{vocab = 6, len = 3}\n"
    .. "h = mha.train{model = m, task = t, steps = 20, quiet = true}\n"
    .. "print(h.loss[1], h.loss[#h.loss])",
    {"mha.tasks", "mha.heads.detect", "mha.optim"})

entry("mha.heads.detect", "training",
    "mha.heads.detect(model, tokens, \"previous\"|\"duplicate\"|\"induction\" [, {rows=\"all\"}]) "
    .. "-> (layers, heads)",
    "TransformerLens's head detector: per sequence and head, the share of attention on the keys a "
    .. "pattern names (previous: i-1; duplicate: earlier copies of token i; induction: the token after "
    .. "an earlier copy), averaged over all query positions, then over the sequences. rows = "
    .. "\"detected\" averages only over positions that have such a key. mha.heads.report(model, "
    .. "tokens) prints all three as a table and heat maps.",
    "score = sum(A * P) / sum(A)",
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 2, max_len = 8}\n"
    .. "probe = mha.tasks.repeated(8, 4, 2)\n"
    .. "print(mha.heads.detect(m, probe, \"previous\"))",
    {"mha.heads.report", "mha.load_model"})

entry("mha.heads.report", "training", "mha.heads.report(model, tokens) -> {previous=, duplicate=, induction=}",
    "Prints the three head-detector scores of every layer and head as a table, and the previous-token "
    .. "and induction scores as heat maps; returns the three (layers, heads) tensors.",
    nil,
    "m = mha.nn.Transformer{vocab = 8, d_model = 16, heads = 2, max_len = 8}\n"
    .. "scores = mha.heads.report(m, mha.tasks.repeated(8, 4, 2))",
    {"mha.heads.detect"})

entry("mha.load_model", "training",
    "mha.load_model(\"induction\"|\"reverse\"|\"difference_1head\"|\"difference_2heads\"|\"char_en\"|"
    .. "\"char_zh\"|path) -> model, extra",
    "A shipped trained model (models/NAME.npz, made by `make models` from a fixed seed; looked for in "
    .. "$MHA_MODELS, ./models and models/ beside the program's build folder) or any file written by "
    .. "mha.save_model. extra holds the file's other entries, e.g. extra[\"history.loss\"], and "
    .. "extra.tokenizer, a CharTokenizer, when the file keeps tokenizer.codepoints (char_en, the King "
    .. "James Bible; char_zh, the 300 Tang poems). A wrong name lists the models found.",
    nil,
    "ok, why = pcall(mha.load_model, \"no-such-model\")\nprint(why)",
    {"mha.save_model", "mha.heads.detect"})

entry("mha.save_model", "training", "mha.save_model(path, model [, extra])",
    "Writes a Transformer's state_dict and its options (config.vocab, ...) as one .npz that "
    .. "mha.load_model rebuilds and np.load reads; extra (name -> tensor) is stored beside them, and "
    .. "extra.tokenizer, a CharTokenizer, as its code points under tokenizer.codepoints.",
    nil,
    "m = mha.nn.Transformer{vocab = 5, d_model = 8, max_len = 4}\n"
    .. "base = os.tmpname()   -- a name of its own (an empty file)\n"
    .. "path = base .. \".npz\"\n"
    .. "mha.save_model(path, m)\n"
    .. "print(mha.load_model(path))\n"
    .. "os.remove(path); os.remove(base)",
    {"mha.load_model", "mha.save"})

entry("mha.data.text", "training", "mha.data.text(\"kjv\"|\"tang300\"|\"song100\"|\"chinese\") -> string",
    "A real text from Debian's packages, as one UTF-8 string, cleaned to what a reader calls text: kjv, "
    .. "the King James Bible (bible-kjv), a verse a line without its number, an empty line between "
    .. "chapters, no book or chapter headers; tang300, song100 and chinese, the 300 Tang poems, the 100 "
    .. "Song ci and a larger collection (fortunes-zh), each piece its title, author and lines, one empty "
    .. "line between two pieces, without colour codes or fortune separators. A missing package: an error "
    .. "naming it and tools/deps.sh text, which installs it.",
    nil,
    "poems = mha.data.text(\"tang300\")\n"
    .. "print(utf8.len(poems), poems:match(\"^[^\\n]*\\n[^\\n]*\"))",
    {"mha.data.split", "mha.tokenizer.CharTokenizer", "mha.tasks.text"})

entry("mha.data.split", "training", "mha.data.split(text [, {val = 0.1}]) -> train, validation",
    "Cuts a text in two on a character boundary: the last floor(val * characters) characters are the "
    .. "validation text, always the same ones, so every loss on them can be reproduced.",
    nil,
    "train, valid = mha.data.split(\"In the beginning God\", {val = 0.2})\n"
    .. "print(train, \"|\", valid)",
    {"mha.data.text", "mha.train"})

entry("mha.tokenizer.CharTokenizer", "training",
    "mha.tokenizer.CharTokenizer(text [, {mask = \"[MASK]\"}]) -> tok;  "
    .. "tok:encode(str [, {unknown = id}]) -> (L);  "
    .. "tok:decode(ids) -> string",
    "One token per Unicode character (a Chinese character is one token). Every character of text gets "
    .. "an id 1 .. tok.vocab_size in the order of the code points; tok.chars[id] is the character, "
    .. "tok.ids[char] its id. encode gives a float32 (L) tensor of ids; a character the tokenizer does not "
    .. "know is an error unless unknown = id is given. tok:codepoints() is the (V) tensor of code points "
    .. "(float32, exact below 2^24) a model's .npz keeps as tokenizer.codepoints, and "
    .. "mha.tokenizer.from_codepoints(cp) makes the same tokenizer from it. (mha.text is the REPL's text "
    .. "wrapping, so the tokenizer lives in mha.tokenizer.) mask = \"[MASK]\" adds a marker for a "
    .. "masked model: one more id, the last (tok.mask_id), named tok.mask_token; encode reads the "
    .. "marker inside a string as that one token, and a checkpoint keeps it as tokenizer.mask.",
    nil,
    "tok = mha.tokenizer.CharTokenizer(\"床前明月光 moon\")\n"
    .. "ids = tok:encode(\"明月\")\n"
    .. "print(ids, tok:decode(ids), tok.vocab_size)",
    {"mha.data.text", "mha.tasks.text"})

entry("mha.tasks.text", "training",
    "mha.tasks.text{text=, tokenizer=, len=64, batch=32, seed=0} -> task;  task:batch([n]) -> tokens, targets",
    "Next-character training on a real text: each row is a window of len characters at a random place "
    .. "(seeded), and targets are the same window one character later, every position counting. The "
    .. "tokenizer defaults to mha.tokenizer.CharTokenizer(text); task.vocab is its vocab_size. It plugs "
    .. "into mha.train as the toy tasks do; val = the validation text reports the loss on it.",
    nil,
    "text = mha.data.text(\"tang300\")\n"
    .. "task = mha.tasks.text{text = text, len = 8, batch = 2}\n"
    .. "tokens, targets = task:batch()\n"
    .. "print(task.tokenizer:decode(tokens:select(1, 1)))\n"
    .. "print(task.tokenizer:decode(targets:select(1, 1)))",
    {"mha.data.split", "mha.train", "mha.tokenizer.CharTokenizer"})

entry("mha.tasks.masked", "training",
    "mha.tasks.masked{text=, tokenizer=, len=64, batch=32, seed=0, p=0.15} -> task;  "
    .. "task:batch([n]) -> tokens, targets",
    "Masked-character training for a model with causal = false, BERT's rule: in each window of len "
    .. "characters round(p*len) positions are chosen (seeded); a chosen character becomes the "
    .. "tokenizer's mask id 80% of the time, a random character 10%, and stays 10%. targets hold the "
    .. "original character at the chosen positions and 0 (not counted) elsewhere. The tokenizer needs "
    .. "a marker (CharTokenizer(text, {mask = \"[MASK]\"}), built so when none is given). It plugs "
    .. "into mha.train; give val a masked task on the validation text.",
    nil,
    "text = mha.data.text(\"tang300\")\n"
    .. "task = mha.tasks.masked{text = text, len = 12, batch = 1, seed = 1}\n"
    .. "tokens, targets = task:batch()\n"
    .. "print(task.tokenizer:decode(tokens:select(1, 1)))\n"
    .. "mha.tasks.show(targets, {zero = \"-\"})",
    {"mha.fill_mask", "mha.tasks.text", "mha.train"})

entry("mha.fill_mask", "training",
    "mha.fill_mask(model, tokenizer, text [, {top_k = 5}]) -> {{token=, prob=}, ...} per marker",
    "A masked (causal = false) character model fills each mask marker of text from both sides: "
    .. "one list per marker, in the order of the text (result[1][1].token is the best guess for "
    .. "the first), each top_k candidates by falling probability; the marker itself is never a "
    .. "candidate. At the prompt the result prints as a table. Errors: no marker in the text, a "
    .. "causal model, text longer than max_len, a character the tokenizer does not know.",
    "p(c) = softmax(logits at the marker, the marker's own id left out)",
    "m, extra = mha.load_model(\"char_zh_mlm\")\n"
    .. "mha.fill_mask(m, extra.tokenizer, \"床前明月光，疑是地上[MASK]。\")",
    {"mha.tasks.masked", "mha.load_model", "mha.generate"})

entry("mha.generate", "training",
    "mha.generate(model, tokenizer, prompt [, {max_new_tokens = 100, temperature = 1, top_k =, top_p =, "
    .. "seed =, stream =}]) -> string",
    "A character model writes: the prompt is encoded, then each new character is drawn by mha.sample "
    .. "from the logits of the last position and fed back alone through the KV cache; when max_len "
    .. "positions are used, the last half is read again into a fresh cache and the writing goes on. "
    .. "seed seeds mha.seed once, so a seed writes the same text on any number of threads. At a "
    .. "terminal or in a notebook (or stream = true) each character is printed as it comes, and "
    .. "Ctrl-C (a notebook's interrupt) stops the "
    .. "writing and returns what was written (the REPL does not echo a text it has just streamed; "
    .. "text = mha.generate(...) keeps it); a loop that calls it stops at its next turn, as Ctrl-C "
    .. "stops every loop. Returns the prompt and what the model wrote.",
    "p(next) = softmax(logits / temperature), cut to the top_k, or to the top_p of the mass",
    "m, extra = mha.load_model(\"char_zh\")\n"
    .. "opts = {max_new_tokens = 40, temperature = 0.8, seed = 1}\n"
    .. "print(mha.generate(m, extra.tokenizer, \"《春晓》\\n\", opts))",
    {"mha.load_model", "Transformer:generate", "mha.sample"})

return D
