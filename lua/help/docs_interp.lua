-- lua/help/docs_interp.lua - module "mha.docs_interp": the help entries of a Transformer's hook
-- points (run_with_cache, run_with_hooks, hook_names) and of mha.interp, read by lua/help/help.lua.
--
-- Every example runs as written, also pasted into the REPL line by line
-- (tests/lua/test_display.lua): globals, never `local`, at most 76 columns a line.

local D, entry = require("mha.help.entry").book()

entry("Transformer:run_with_cache", "interp",
    "model:run_with_cache(tokens [, {names =, hooks =}]) -> logits, cache",
    "One forward that keeps its activations under TransformerLens's hook names: cache[\"hook_embed\"], "
    .. "cache[\"blocks.0.attn.hook_pattern\"] (N, H, L, S), ... (model:hook_names() lists them; "
    .. "docs/interp.md gives every shape). Layers count from 0 in the names, as in the state_dict. "
    .. "names keeps only the names of a list (or those a function(name) accepts); hooks runs in the "
    .. "same forward as in run_with_hooks. The tensors are detached from the graph. The attention's "
    .. "inside (q, k, v, scores, pattern, z) is computed from its weights only in the layers asked "
    .. "for; it equals the fused kernel's to float rounding.",
    nil,
    "m = mha.load_model(\"induction\")\n"
    .. "logits, cache = m:run_with_cache({{3, 7, 9, 3, 7}})\n"
    .. "print(cache[\"blocks.1.attn.hook_pattern\"]:shape())",
    {"Transformer:run_with_hooks", "Transformer:hook_names", "mha.interp.ablate"})

entry("Transformer:run_with_hooks", "interp",
    "model:run_with_hooks(tokens, {[name] = function(t, name) ... end}) -> logits",
    "One forward with a hook at each named activation: the hook sees the tensor and returns nil to "
    .. "leave it, or a tensor of the same shape that the rest of the forward uses instead (gradients "
    .. "flow through it). An unknown name gets a did-you-mean, a replacement of another shape or a "
    .. "hook that fails an error naming the hook; the model is left as it was. A hook that returns "
    .. "its input changes nothing, bit for bit. TransformerLens's form {fwd_hooks = {{name, fn}, "
    .. "...}} works too (name a string, or a function(name) -> true for each name to hook; two hooks "
    .. "on one name run in turn), and so does {hooks = {[name] = fn}} as in run_with_cache.",
    nil,
    "m = mha.load_model(\"induction\")\n"
    .. "half = function(z) return z * 0.5 end\n"
    .. "print(m:run_with_hooks({{3, 7, 9}}, {[\"blocks.1.attn.hook_z\"] = half}))",
    {"Transformer:run_with_cache", "mha.interp.patch"})

entry("Transformer:hook_names", "interp", "model:hook_names() -> {name, ...}",
    "The hook names of this model in the order its forward reaches them: hook_embed, "
    .. "hook_pos_embed, then per block blocks.l.hook_resid_pre, ln1.hook_normalized, attn.hook_q, "
    .. "hook_k, hook_v, hook_attn_scores, hook_pattern, hook_z, hook_attn_out, hook_resid_mid, "
    .. "ln2.hook_normalized, mlp.hook_pre, mlp.hook_post, hook_mlp_out, hook_resid_post, and "
    .. "ln_final.hook_normalized; only the names whose part the model has (no MLP: no mlp names).",
    nil,
    "m = mha.load_model(\"induction\")\n"
    .. "print(#m:hook_names(), m:hook_names()[3])",
    {"Transformer:run_with_cache"})

entry("mha.interp.ablate", "interp",
    "mha.interp.ablate(model, tokens, {layer =, head =, kind = \"zero\", reference =}) -> logits",
    "The logits (N, L, vocab) with head `head` of layer `layer` knocked out (both 1-based; every head "
    .. "of the layer when head is nil): its output z at blocks.{layer-1}.attn.hook_z replaced by "
    .. "zeros, or with kind = \"mean\" by its mean over the batch of reference (default tokens), "
    .. "position by position. Zeroing z of a head equals zeroing its columns of W_O.",
    nil,
    "m = mha.load_model(\"induction\")\n"
    .. "probe = mha.tasks.repeated(m.vocab, 6, 1)\n"
    .. "print(mha.interp.ablate(m, probe, {layer = 2, head = 1}):shape())",
    {"mha.interp.patch", "Transformer:run_with_hooks"})

entry("mha.interp.patch", "interp",
    "mha.interp.patch(model, clean, corrupt, name, metric [, {positions =, heads =}]) -> scores",
    "Activation patching: for each layer (and each position with positions = true, each head with "
    .. "heads = true), the corrupt run with the activation `name` of that layer taken from the clean "
    .. "run, scored (metric(patched) - metric(corrupt)) / (metric(clean) - metric(corrupt)): 0 is "
    .. "nothing patched, 1 the clean run. name is a block's hook name without blocks.l. "
    .. "(\"hook_resid_pre\", \"attn.hook_z\"): patch runs it at every layer, so a name with one "
    .. "layer (\"blocks.0.hook_resid_pre\") is refused; metric(logits) returns a number. The result is "
    .. "(layers), (layers, L), (layers, H) or (layers, L, H).",
    "score = (m_patched - m_corrupt) / (m_clean - m_corrupt)",
    "m = mha.load_model(\"induction\")\n"
    .. "clean = {{3, 7, 9, 4, 3, 7, 9}}\n"
    .. "corrupt = {{3, 8, 9, 4, 3, 7, 9}}\n"
    .. "metric = function(lg) return lg[1][6][9] - lg[1][6][10] end\n"
    .. "print(mha.interp.patch(m, clean, corrupt, \"hook_resid_pre\", metric))",
    {"mha.interp.ablate", "mha.interp.attribution"})

entry("mha.interp.logit_lens", "interp", "mha.interp.logit_lens(model, tokens) -> (layers + 1, N, L, vocab)",
    "The logit lens: the residual stream entering each block, then the stream after the last, each "
    .. "read through the final norm (when the model has one) and the unembedding, as if the model "
    .. "stopped there. Row 1 is the embeddings alone; the last row equals model:forward(tokens).",
    "lens[l] = unembed(ln_final(resid_pre of block l))",
    "m = mha.load_model(\"induction\")\n"
    .. "lens = mha.interp.logit_lens(m, {{3, 7, 9, 3, 7}})\n"
    .. "print(lens:shape())",
    {"mha.interp.attribution"})

entry("mha.interp.attribution", "interp",
    "mha.interp.attribution(model, tokens, target) -> {heads =, mlp =, embed =, pos =, bias =, logit =}",
    "Direct logit attribution: how much each head (heads, (layers, H, N, L)), each MLP (mlp, "
    .. "(layers, N, L)) and the embeddings (embed, pos, (N, L)) write in the direction of target's "
    .. "unembedding, with the final norm's scale read from the run and held fixed (TransformerLens's "
    .. "apply_ln). bias holds the bias terms: each layer's attention b_O and the final norm's bias; an "
    .. "MLP's share includes its own bias. target is one id or (N, L) ids (the next tokens). The "
    .. "parts sum to logit, the model's logit of target. Needs norm = \"pre\" or \"none\".",
    "logit = Σ heads + Σ mlp + embed + pos + bias",
    "m = mha.load_model(\"induction\")\n"
    .. "a = mha.interp.attribution(m, {{3, 7, 9, 3, 7}}, 9)\n"
    .. "print(a.heads:select(4, 5))",
    {"mha.interp.logit_lens", "mha.interp.ablate"})

return D
