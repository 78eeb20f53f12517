-- lua/train/train.lua - module "mha.train": mha.train{model=, task=, steps=, ...} trains a model on
-- a task at the prompt (a progress line, Ctrl-C stops and keeps the model, a live loss curve, the
-- validation loss every k steps) and returns its history.
-- Also mha.train.loss (the masked cross entropy and accuracy every task's targets use).

local mha = require "mha.core"
local optim = require "mha.nn.optim"
local term = require "mha.term"
local raise = require "mha.raise"   -- errors at the user's line
local options = require "mha.options"
local i18n = require "mha.i18n"   -- what train prints (room train)

local M = {}

-- loss, accuracy of logits (N, L, V) against targets (N, L) (0 = not counted): the mean over
-- counted positions of -log softmax(logits)[target], as cross_entropy with ignore_index; accuracy
-- is the fraction of counted positions whose argmax is the target. The loss is in the graph
-- (loss:backward() works).
function M.loss(logits, targets)
    local shape = logits:shape()
    local N, L, V = shape[1], shape[2], shape[3]
    if not mha.is_tensor(targets) then targets = mha.tensor(targets) end
    local count = targets:gt(0):sum():item()
    if count == 0 then raise("train.loss: no position counts (every target is 0)") end
    local onehot = mha.eq(targets:view(N, L, 1), mha.arange(1, V + 1):view(1, 1, V))
    local weight = mha.zeros(N, L, V):masked_fill(onehot, 1 / count)
    local loss = -(mha.log_softmax(logits, 3) * weight):sum()
    local correct = mha.no_grad(function() return mha.eq(logits:argmax(3), targets):sum():item() end)
    return loss, correct / count
end

local OPTIONS = {model = true, task = true, steps = true, lr = true, batch = true, optimizer = true, log_every = true,
                 seed = true, weight_decay = true, clip = true, plot = true, attention_every = true, quiet = true,
                 on_log = true, val = true, val_every = true, val_batches = true, checkpoint = true,
                 checkpoint_every = true, resume = true}

local function fmt_time(s)
    if s >= 60 then return string.format("%dm%02ds", math.floor(s / 60), math.floor(s % 60)) end
    return string.format("%.1fs", s)
end

local function make_optimizer(o, params)
    local kind = o.optimizer or "adamw"
    local lr = o.lr or 1e-3
    for _, name in ipairs {"lr", "weight_decay"} do   -- as train's options, not the optimizer's
        if o[name] ~= nil and (type(o[name]) ~= "number" or o[name] ~= o[name] or o[name] < 0) then
            raise(string.format("train: option %s must be a number >= 0, got %s", name, tostring(o[name])))
        end
    end
    if kind == "adamw" then return optim.AdamW(params, {lr = lr, weight_decay = o.weight_decay or 0.01}) end
    if kind == "adam" then return optim.Adam(params, {lr = lr, weight_decay = o.weight_decay or 0}) end
    if kind == "sgd" then return optim.SGD(params, {lr = lr, weight_decay = o.weight_decay or 0}) end
    raise(string.format('train: option optimizer must be "adamw", "adam" or "sgd", got %s', tostring(kind)))
end

-- What train prints and the curves' words, in the language of the printoptions (a Chinese lesson
-- sets "zh").
local function words() return i18n.words(require("mha.display").printoptions().lang).train end

-- The loss and accuracy curves (and the validation loss), on the run's own figure: redrawn live in
-- a gnuplot window, or once at the end as a text plot; the labels in the language of the
-- printoptions (a Chinese lesson sets "zh").
local function draw_curve(history, steps, model, figure)
    local said = words()
    local xs = {}
    for i = 1, #history.loss do xs[i] = history.step[i] end
    local title = said.training
    if math.type(model.heads) == "integer" and math.type(model.d_model) == "integer"
        and math.type(model.layers) == "integer" then
        title = said.model(model.heads, model.d_model, model.layers)
    end
    local curves = {{x = xs, y = history.loss, title = said.loss},
                    {x = xs, y = history.acc, title = said.accuracy}}
    if history.val_loss and #history.val_loss > 0 then
        curves[3] = {x = history.val_step, y = history.val_loss, title = said.val_loss}
    end
    curves.title, curves.xlabel, curves.xrange = title, said.step, {0, steps}
    figure:line(curves)
end

-- Is the figure a window (redrawn live) rather than text (drawn once, at the end)?
local function windowed()
    local name = require("mha.plot").terminal()
    return name == "qt" or name == "wxt" or name == "x11"
end

-- Each layer's heads on a sequence of the task, one figure per layer for the whole run
-- (figures[i]).
local function draw_attention(model, task, figures)
    local tokens = task:batch(1)
    mha.no_grad(function() model:forward(tokens) end)
    for i, w in ipairs(model:attention()) do
        figures[i] = figures[i] or require("mha.plot").figure{current = false}
        figures[i]:heads(w[1], {title = string.format(words().layer, i)})
    end
end

-- The options of a run checked: a model, a task whose symbols and sequences fit it, a positive
-- number of steps. -> model, task, steps
local function checked_run(o)
    local fname = "train"
    if type(o) ~= "table" then raise("train: give a table, e.g. mha.train{model = m, task = t, steps = 200}") end
    local names = {}
    for n in pairs(OPTIONS) do names[#names + 1] = n end
    table.sort(names)
    options.check("train", o, names)
    local model, task = o.model, o.task
    if type(model) ~= "table" or type(model.forward) ~= "function" then
        raise("train: option model must be a model, e.g. mha.nn.Transformer{...}")
    end
    if type(task) ~= "table" or type(task.batch) ~= "function" then
        raise("train: option task must be a task, e.g. mha.tasks.reverse{vocab = 10, len = 6}")
    end
    if task.vocab and model.vocab and task.vocab > model.vocab then
        raise(string.format("%s: the task uses %d symbols but the model's vocab is %d", fname, task.vocab,
                            model.vocab))
    end
    if task.seq_len and model.max_len and task.seq_len > model.max_len then
        raise(string.format("%s: the task's sequences have %d tokens but the model's max_len is %d", fname,
                            task.seq_len, model.max_len))
    end
    local steps = o.steps or 100
    if math.type(steps) ~= "integer" or steps < 1 then
        raise("train: option steps must be a positive integer, got " .. tostring(steps))
    end
    return model, task, steps
end

-- Options val, val_every and val_batches checked -> the validation task (nil without val), every
-- how many steps, over how many batches. val is a task as it is, or a text (a string) cut into
-- windows as the training task's (a mha.tasks.text), with its tokenizer, len and batch.
local function validation(o, task, log_every)
    local val_every, val_batches = o.val_every or log_every, o.val_batches or 4
    for _, setting in ipairs({{"val_every", val_every}, {"val_batches", val_batches}}) do
        if math.type(setting[2]) ~= "integer" or setting[2] < 1 then
            raise(string.format("train: option %s must be a positive integer, got %s", setting[1],
                                tostring(setting[2])))
        end
    end
    local val = o.val
    if val == nil then return nil end
    if type(val) == "string" then
        if task.name ~= "text" then
            raise("train: option val is a text but the task is not mha.tasks.text; " ..
                  "give a task as val")
        end
        val = require("mha.tasks").text{text = val, tokenizer = task.tokenizer, len = task.len,
                                        batch = task.batch_size, seed = 0}
    end
    if type(val) ~= "table" or type(val.batch) ~= "function" then
        raise("train: option val must be a task or a text, e.g. " ..
              "val = mha.tasks.text{text = valid}, got " .. type(val))
    end
    if val == task then   -- each validation restarts the val task's stream
        raise("train: option val must be another task than task, e.g. one on the validation text")
    end
    return val, val_every, val_batches
end

-- The validation loss: the mean of the masked loss over `batches` batches of a task, the same
-- ones each time (its stream restarts at its seed), outside the graph. mha.train logs it, and
-- writing.val_loss returns it.
function M.validation_loss(model, val, batches)
    val:reseed(val.seed or 0)
    return mha.no_grad(function()
        local sum = 0
        for _ = 1, batches do
            local tokens, targets = val:batch()
            sum = sum + M.loss(model:forward(tokens, {need_weights = false}), targets):item()
        end
        return sum / batches
    end)
end

-- The words of history's latest validation loss, after a progress line: "" without one, or when it
-- was measured at step since or before (so that a log line says each once).
local function val_words(history, since)
    local losses, at = history.val_loss, history.val_step
    if not losses or #losses == 0 or at[#at] <= (since or 0) then return "" end
    return string.format(words().val, losses[#losses])
end

-- The progress line at a terminal, rewritten in place: step, rate, the mean loss and accuracy
-- since the last log step, the time left, the latest validation loss. Rate and time left are in
-- wall-clock time, what the student waits (CPU time counts both threads, and none while the
-- machine serves others).
local function show_progress(run, step, mean_loss, mean_acc)
    local el = mha.clock() - run.wall0
    local rate = (step - run.start + 1) / math.max(el, 1e-9)
    local eta, val = fmt_time((run.steps - step) / rate), val_words(run.history)
    local per_s = string.format(rate < 100 and "%.1f" or "%.0f", rate)
    local line = string.format(words().progress, step, run.steps, per_s, mean_loss, 100 * mean_acc, eta) .. val
    -- within the terminal's width less two cells: a line that wraps leaves a copy at each
    -- rewrite, and the "^C" the terminal echoes when Ctrl-C stops the run goes after it. The rate
    -- goes first, so that the losses stay whole.
    local text, room = require("mha.text"), term.columns() - 2
    if text.width(line) > room then
        line = string.format(words().progress_short, step, run.steps, mean_loss, 100 * mean_acc, eta) .. val
    end
    io.write("\r\27[K", text.fit(line, room))
    io.flush()
    run.shown_at = mha.clock()
end

-- A log step: the mean loss and accuracy since the previous one kept in the history, the progress
-- line (at a terminal) or a log line, the live curve, the attention maps, on_log.
local function log_step(run, step, mean_loss, mean_acc)
    local o, history, steps = run.o, run.history, run.steps
    local n = #history.loss + 1
    history.loss[n], history.acc[n], history.step[n] = mean_loss, mean_acc, step
    if run.tty then
        show_progress(run, step, mean_loss, mean_acc)
    elseif not o.quiet then
        print(string.format(words().log, step, history.loss[n], 100 * history.acc[n])
              .. val_words(history, history.step[n - 1]))
    end
    -- live, on an x axis fixed at 0 .. steps: at most 5 redraws a second
    if o.plot and windowed() and (step == steps or mha.clock() - run.drawn_at >= 0.2) then
        draw_curve(history, steps, run.model, run.curves)
        run.drawn_at = mha.clock()
    end
    if (o.attention_every or 0) > 0 and step % o.attention_every == 0 then
        draw_attention(run.model, run.task, run.layer_figures)
    end
    if o.on_log then o.on_log(step, history) end
end

-- A checkpoint: the model as mha.save_model writes it (a text task's tokenizer too, so that
-- mha.load_model reads it as a model), and under extra.* the optimizer's state
-- (extra.optim.<its state_dict key>), the step reached and the history's curves
-- (extra.train.step, .loss, .acc, .log_step, and .val_loss, .val_step with val). Written to a
-- temporary file, then renamed over path: a Ctrl-C while writing leaves the previous checkpoint
-- whole.
local function save_checkpoint(run)
    local history, extra = run.history, {}
    if run.task.tokenizer then extra.tokenizer = run.task.tokenizer end
    for k, v in pairs(run.opt:state_dict()) do extra["extra.optim." .. k] = v end
    extra["extra.train.step"] = mha.tensor({history.steps})
    if #history.loss > 0 then
        extra["extra.train.loss"] = mha.tensor(history.loss)
        extra["extra.train.acc"] = mha.tensor(history.acc)
        extra["extra.train.log_step"] = mha.tensor(history.step)
    end
    if history.val_loss and #history.val_loss > 0 then
        extra["extra.train.val_loss"] = mha.tensor(history.val_loss)
        extra["extra.train.val_step"] = mha.tensor(history.val_step)
    end
    local tmp = run.checkpoint:gsub("%.npz$", "") .. ".part.npz"
    require("mha.models").save_model(tmp, run.model, extra)
    local ok, err = os.rename(tmp, run.checkpoint)
    if not ok then raise("train: cannot write the checkpoint " .. run.checkpoint .. ": " .. tostring(err)) end
end

-- Option resume: the model's weights, the optimizer's state and the history from a checkpoint of
-- save_checkpoint; -> the step it reached. The task is reseeded at (seed or 0) + that step, so a
-- resumed run is repeatable (its batches are not the ones an unbroken run would have drawn).
local function resume_from(run, path)
    if type(path) ~= "string" then raise("train: option resume must be the path of a checkpoint, got " .. type(path)) end
    local ok, tbl = pcall(mha.load, path)
    if not ok then raise("train: resume: " .. tostring(tbl)) end
    if not tbl["extra.train.step"] then
        raise("train: resume: " .. path .. " is not a training checkpoint (no extra.train.step): " ..
              "mha.train{checkpoint = path} writes one")
    end
    local done = math.tointeger(tbl["extra.train.step"]:item())
    if done >= run.steps then
        raise(string.format("train: resume: the checkpoint has reached step %d already; give steps > %d", done, done))
    end
    local sd, osd = {}, {}
    for k, v in pairs(tbl) do
        if k:match("^extra%.optim%.") then osd[k:sub(#"extra.optim." + 1)] = v
        elseif not k:match("^config%.") and not k:match("^extra%.") and k ~= "tokenizer.codepoints" then sd[k] = v end
    end
    run.model:load_state_dict(sd)
    run.opt:load_state_dict(osd)
    local history = run.history
    if tbl["extra.train.loss"] then
        history.loss = tbl["extra.train.loss"]:totable()
        history.acc = tbl["extra.train.acc"]:totable()
        history.step = tbl["extra.train.log_step"]:totable()
        for i, v in ipairs(history.step) do history.step[i] = math.tointeger(v) end
    end
    -- a run with val goes on with the checkpoint's validation curve
    if history.val_loss and tbl["extra.train.val_loss"] then
        history.val_loss = tbl["extra.train.val_loss"]:totable()
        history.val_step = tbl["extra.train.val_step"]:totable()
        for i, v in ipairs(history.val_step) do history.val_step[i] = math.tointeger(v) end
    end
    history.steps = done
    run.task:reseed((run.o.seed or 0) + done)
    return done
end

-- The steps: a batch, the forward pass and its loss, the backward pass, the gradients clipped to
-- norm clip, the optimizer's step; every val_every steps, and at the last, the validation loss
-- (with val); every log_every steps, and at the last, a log step.
local function run_steps(run)
    local model, task, opt, params, clip = run.model, run.task, run.opt, run.params, run.clip
    local sum_loss, sum_acc, n_acc = 0, 0, 0
    for step = run.start, run.steps do
        local tokens, targets = task:batch(run.batch)
        local logits = model:forward(tokens, {need_weights = false})
        local loss, acc = M.loss(logits, targets)
        opt:zero_grad()
        loss:backward()
        if clip and clip > 0 then optim.clip_grad_norm(params, clip) end
        opt:step()
        sum_loss, sum_acc, n_acc = sum_loss + loss:item(), sum_acc + acc, n_acc + 1
        run.history.steps, run.unlogged = step, {loss = sum_loss, acc = sum_acc, n = n_acc}
        if run.val and (step % run.val_every == 0 or step == run.steps) then
            local k = #run.history.val_loss + 1
            run.history.val_loss[k] = M.validation_loss(model, run.val, run.val_batches)
            run.history.val_step[k] = step
        end
        if step % run.log_every == 0 or step == run.steps then
            local mean_loss, mean_acc = sum_loss / n_acc, sum_acc / n_acc
            sum_loss, sum_acc, n_acc = 0, 0, 0
            run.unlogged = nil
            log_step(run, step, mean_loss, mean_acc)
        elseif run.tty and mha.clock() - run.shown_at >= 0.5 then
            -- between log steps too (lesson 28 logs every 150 steps, 5 to 15 s apart), twice a
            -- second at most, so that a terminal never sits blank while it trains
            show_progress(run, step, sum_loss / n_acc, sum_acc / n_acc)
        end
        if run.checkpoint and (step % run.checkpoint_every == 0 or step == run.steps) then save_checkpoint(run) end
    end
end

-- Runs the steps; true when Ctrl-C stopped them. Ctrl-C in the REPL both sets the kernels' stop
-- flag and arms a hook that raises "interrupted" at the next Lua instruction; whichever fires first
-- is caught by the inner pcall, and a hook still armed then fires inside the outer one. Either way
-- the model keeps the weights of the last finished step.
local function run_until_interrupted(run)
    local history = run.history
    local function guarded()
        local ok, err = pcall(run_steps, run)
        if ok then return false end
        if not tostring(err):find("interrupted", 1, true) then error(err, 0) end
        for _ = 1, 4 do local _ = history.steps end   -- a pending hook fires here, still protected
        return true
    end
    local ok, res = pcall(guarded)
    if not ok and not tostring(res):find("interrupted", 1, true) then error(res, 0) end
    return not ok or res
end

-- mha.train{model=, task=, steps=100, lr=1e-3, batch=(the task's), optimizer="adamw",
--           log_every=(steps/10), seed=, weight_decay=, clip=1.0, plot=false, attention_every=0,
--           quiet=false, on_log=, val=, val_every=(log_every), val_batches=4, checkpoint=,
--           checkpoint_every=(log_every), resume=}
-- on_log(step, history) is called after each log step (e.g. to measure the heads as they form).
-- val (a task, or a text for a text task) gives the validation loss every val_every steps and at
-- the last: the mean over val_batches batches of the val task (the same ones each time), shown in
-- the progress line.
-- checkpoint = path writes the model, the optimizer's state and the history there every
-- checkpoint_every steps, at the last and when Ctrl-C stops the run; resume = path (the same path,
-- typically) goes on from such a checkpoint to step steps (steps counts the steps before it too).
-- -> history {loss = {...}, acc = {...}, step = {...}, steps = n done, interrupted = bool,
--             seconds = CPU s, val_loss = {...}, val_step = {...} (with val)}
-- Ctrl-C prints the step reached and returns the history so far (the model keeps what it learned);
-- a loop that called train stops at its next turn.
-- history.loss[i] and acc[i] are the mean loss and accuracy over the steps since the previous log
-- line.
function M.train(o)
    local model, task, steps = checked_run(o)
    if o.seed ~= nil then task:reseed(o.seed) end
    -- what the steps share: the options, the optimizer, the history, the clock, the figures
    local run = {o = o, model = model, task = task, steps = steps}
    run.batch = o.batch or task.batch_size
    run.log_every = o.log_every or math.max(1, steps // 10)
    run.clip = o.clip == nil and 1.0 or o.clip
    run.params = model:parameters()
    run.opt = make_optimizer(o, run.params)
    run.tty = not o.quiet and term.isatty(1)
    run.val, run.val_every, run.val_batches = validation(o, task, run.log_every)
    local history = {loss = {}, acc = {}, step = {}, steps = 0, interrupted = false,
                     val_loss = run.val and {} or nil, val_step = run.val and {} or nil}
    run.history = history
    run.start = 1
    if o.checkpoint ~= nil and (type(o.checkpoint) ~= "string" or not o.checkpoint:match("%.npz$")) then
        raise("train: option checkpoint must be a path ending in .npz, e.g. \"mine.npz\", got " ..
              (type(o.checkpoint) == "string" and o.checkpoint or type(o.checkpoint)))
    end
    run.checkpoint, run.checkpoint_every = o.checkpoint, o.checkpoint_every or run.log_every
    if math.type(run.checkpoint_every) ~= "integer" or run.checkpoint_every < 1 then
        raise("train: option checkpoint_every must be a positive integer, got " .. tostring(run.checkpoint_every))
    end
    if o.resume ~= nil then
        run.start = resume_from(run, o.resume) + 1
    end
    run.t0 = os.clock()
    run.wall0 = mha.clock()
    run.drawn_at = -math.huge   -- mha.clock() of the last live redraw
    run.shown_at = mha.clock()   -- mha.clock() of the last progress line
    -- each run's curves in a figure of their own (a window: two runs, 1 head and 2 heads, side by
    -- side), and its attention maps in others, so that neither draws over the other
    run.curves = o.plot and require("mha.plot").figure{current = false} or nil
    run.layer_figures = {}
    if run_until_interrupted(run) then
        history.interrupted = true
        -- the steps since the last log step make the history's last row, at the step reached: the
        -- loss the progress line showed last is in h
        local unlogged = run.unlogged
        if unlogged and unlogged.n > 0 and history.step[#history.step] ~= history.steps then
            local n = #history.loss + 1
            history.loss[n], history.acc[n] = unlogged.loss / unlogged.n, unlogged.acc / unlogged.n
            history.step[n] = history.steps
        end
        run.opt:zero_grad()
        if run.checkpoint and history.steps >= run.start then save_checkpoint(run) end
        if run.tty then io.write("\n") end
        print(string.format(words().interrupted, history.steps, steps))
    end
    history.seconds = os.clock() - run.t0
    -- text: once at the end; a window: once more when Ctrl-C or the rate limit left the last point
    -- undrawn
    if o.plot and #history.loss > 0 and (not windowed() or history.interrupted) then
        draw_curve(history, steps, model, run.curves)
    end

    -- Ctrl-C: the model keeps the weights of the last finished step and the history so far is
    -- returned, while a loop that calls train (lesson 17) stops at its next turn, once, as Ctrl-C
    -- stops every loop (the REPL's interrupt_later; without the REPL, the interrupt goes on)
    if history.interrupted then
        local later = debug.getregistry()["mha.repl.interrupt_later"]
        if later then return later(history) end
        raise("interrupted")
    end
    if run.tty then
        io.write("\r\27[K", string.format(words().done, history.steps, fmt_time(history.seconds),
                                            history.loss[#history.loss] or 0 / 0,
                                            100 * (history.acc[#history.acc] or 0)),
                 val_words(history), "\n")
    end
    return history
end

setmetatable(M, {__call = function(_, o) return M.train(o) end})

return M
