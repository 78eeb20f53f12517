-- bench/table.lua - the one markdown table of `make bench` (issue 24's shape), built from the rows
-- each part saved: `build/mha-repl bench/table.lua DIR` reads DIR/bench_{c,lua,grad,train,generate}.txt
-- and writes DIR/bench.md.
--
-- The parts' files hold "meta KEY VALUE" lines (bench_c.txt: date, CPU, peak...) and
-- "row ID key=value..." lines (nan: not timed). A column's peer is the faster of NumPy and torch:
-- "best peer" as OpenBLAS chose its kernel (OPENBLAS_CORETYPE unset, the issue's rule), "fair peer"
-- the same told the kernel it should have chosen, where the parts timed one. "met" checks every ratio
-- shown against the target, and where a target sits below what the hardware allows (ours/peer if every
-- FLOP of ours ran at the probed peak and each softmax element at the probed rate), says so.

local dir = arg and arg[1] or "build"

-- meta (KEY -> VALUE) and rows (ID -> {key = number}) of one part's file; empty when it is missing
local function read(name)
    local meta, rows = {}, {}
    local f = io.open(dir .. "/" .. name)
    if not f then return meta, rows, false end
    for line in f:lines() do
        local key, value = line:match("^meta (%S+) (.*)$")
        if key then meta[key] = value end
        local id, fields = line:match("^row (%S+) (.*)$")
        if id then
            local v = {}
            for k, x in fields:gmatch("([%w_]+)=(%S+)") do
                local n = tonumber(x)
                if n and n == n then v[k] = n end   -- nan: not timed
            end
            rows[id] = v
        end
    end
    f:close()
    return meta, rows, true
end

local meta, c = read("bench_c.txt")
local _, lua = read("bench_lua.txt")
local _, grad = read("bench_grad.txt")
local _, train = read("bench_train.txt")
local _, gen = read("bench_generate.txt")

local function ms(x)
    if not x then return "-" end
    return string.format(x < 10 and "%.2f" or x < 100 and "%.1f" or "%.0f", x)
end
local function best(a, b) return a and b and math.min(a, b) or a or b end

-- the products' fraction of the peak the issue asks for: 80% with AVX-512, 85% with AVX2
local isa = meta.isa or "?"
local product_peak = isa == "avx512" and 0.80 or isa == "avx2" and 0.85 or nil

-- The rows of the table: the case's label, its row (a table of numbers), the bound on ours/peer and
-- on the fraction of the peak.
local ROWS = {
    {"matmul 512³", c.matmul_512, 1.0, product_peak},
    {"in-projection (2048,512)→1536", c.matmul_in_2048, 1.0, product_peak},
    {"out-projection (2048,512)→512", c.matmul_out_2048, 1.0, product_peak},
    {"MHA L=64", c.mha_64, 1.0},
    {"MHA L=512", c.mha_512, 1.0},
    {"MHA L=512, weights returned", c.mha_512_w, 1.0},
    {"MHA L=2048", c.mha_2048, 0.5},
    {"forward + backward L=512 (E=512, H=8)", grad.grad_512, 0.7},
    {"forward + backward L=2048", grad.grad_2048, 0.6},
    {"training step, induction model", train.train_induction_1, 0.7},
    {"training step, nanoGPT's CPU configuration (4 layers, d_model 128, batch 12×64)", train.train_nanogpt_1, 0.7},
    {"decoding 256 tokens with the KV cache (4 layers, d_model 128)", gen.generate_cached, 0.7},
}

-- The "met" cell: "yes", or what misses, with the bound beside it: the row's FLOPs at the FMA peak
-- and its softmax elements at the rate bench.c's softmax probe measured. A bound above the target
-- is what stops it; one below says the hardware allows the target and our code falls short.
local function met(r, target, min_peak, rule, fair)
    local misses, bound_hit, bound_below = {}, nil, nil
    for _, p in ipairs{{"best peer", rule}, {"fair peer", fair}} do
        local name, peer = p[1], p[2]
        if peer and r.ours / peer > target then
            misses[#misses + 1] = string.format("%s %.2f", name, r.ours / peer)
            local bound = r.gflop and r.peak and (r.gflop / r.peak * 1e3 + (r.softmax_ms or 0)) / peer
            if bound and bound > target then bound_hit = string.format("%.2f", bound)
            elseif bound then bound_below = string.format("%.2f", bound) end
        end
    end
    if min_peak and r.of_peak and r.of_peak < min_peak then
        misses[#misses + 1] = string.format("%.0f%% of peak", 100 * r.of_peak)
    end
    if #misses == 0 then return (rule or fair) and "yes" or "-" end
    local cell = "no: " .. table.concat(misses, ", ")
    if bound_hit then
        cell = cell .. "; at the FMA peak" .. ((r.softmax_ms or 0) > 0 and ", the softmax at its probed rate," or "") ..
            " ours/peer ≥ " .. bound_hit .. ", above the target"
    elseif bound_below then
        cell = cell .. "; at the FMA peak ours/peer ≥ " .. bound_below .. ", within the target: the shortfall is ours"
    end
    return cell
end

local out = {}
local function add(s) out[#out + 1] = s end
local loadavg = (function()
    local f = io.open("/proc/loadavg")
    local s = f and f:read("l") or "?"
    if f then f:close() end
    return s:match("^(%S+ %S+ %S+)") or s
end)()
if meta.date then
    add(string.format("`make bench`, %s: %s (family %s model %s), kernels \"%s\", one core's fp32 peak %s GFLOP/s " ..
        "(probes %s), load average %s when the C table started and %s when this table was written; " ..
        "best peer: %s (OPENBLAS_CORETYPE unset)%s.", meta.date, meta.cpu or "?", meta.family or "?", meta.model or "?", isa, meta.peak or "?",
        (meta.probes or "?"):gsub("^(%S+) %S+ (%S+)$", "%1-%2"), meta.load or "?", loadavg, meta.peer or "?",
        meta.fair and "; fair peer: " .. meta.fair or ""))
else
    add("`make bench` in part: the C table has not run, so the date, the CPU, the peak and the peers " ..
        "are not known here (`make bench` runs every part).")
end
add("")
add("| case | ours ms | NumPy ms | torch ms | fair peer ms | ours/best peer | ours/fair peer | % of peak | target " ..
    "| met |")
add("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
for _, row in ipairs(ROWS) do
    local label, r, target, min_peak = row[1], row[2], row[3], row[4]
    if r and r.ours then
        local rule, fair = best(r.numpy, r.torch), best(r.fair_numpy, r.fair_torch)
        local target_text = string.format("≤ %.1f", target) .. (min_peak and string.format(", ≥ %.0f%% of peak",
            100 * min_peak) or "")
        add(string.format("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", label, ms(r.ours), ms(r.numpy),
            ms(r.torch), ms(fair), rule and string.format("%.2f", r.ours / rule) or "-",
            fair and string.format("%.2f", r.ours / fair) or "-",
            r.of_peak and string.format("%.0f%%", 100 * r.of_peak) or "-", target_text,
            met(r, target, min_peak, rule, fair)))
    else
        add(string.format("| %s | - | - | - | - | - | - | - | ≤ %.1f | not timed |", label, target))
    end
end

-- from Lua at the prompt: the worst lua/C over the cases both timed, and the median
local ratios, worst, worst_id = {}, nil, nil
for id, r in pairs(lua) do
    if r.ours and r.c then
        ratios[#ratios + 1] = r.ours / r.c
        if not worst or r.ours / r.c > worst then worst, worst_id = r.ours / r.c, id:gsub("^lua_", "") end
    end
end
if worst then
    table.sort(ratios)
    local n = #ratios
    local mid = n % 2 == 1 and ratios[(n + 1) // 2] or (ratios[n // 2] + ratios[n // 2 + 1]) / 2
    local w = lua["lua_" .. worst_id]
    add(string.format("| from Lua at the prompt, lua/C over %d cases: median %.2f, worst %.2f (%s, its ms and %% of " ..
        "peak) | %s | - | - | - | - | - | %s | lua/C ≤ 1.10 | %s |", n, mid, worst, worst_id, ms(w.ours),
        w.of_peak and string.format("%.0f%%", 100 * w.of_peak) or "-",
        worst <= 1.10 and "yes" or string.format("no: %.2f", worst)))
else
    add("| from Lua at the prompt | - | - | - | - | - | - | - | lua/C ≤ 1.10 | not timed |")
end
add("")
add("ms: the median of the runs (forward + backward and training steps by CPU time; decoding: the fastest of 3 " ..
    "by CPU time); best peer: the faster of NumPy and " ..
    "torch 1.13 on one thread as OpenBLAS chose its kernel; fair peer: the same told " ..
    "OPENBLAS_CORETYPE, where OpenBLAS fell back to its generic kernel; % of peak: the median over runs of each " ..
    "run's FLOP rate over an FMA probe taken just before it, both by CPU time; training steps and decoding: one " ..
    "thread; lua/C: each case timed from Lua twice with C's time of it before and after each, the " ..
    "fastest Lua call over the fastest C call, both by CPU time (the row's ms is that Lua call's). " ..
    "Written by bench/table.lua from the parts' saved rows; see docs/performance.md.")

local text = table.concat(out, "\n") .. "\n"
local f = assert(io.open(dir .. "/bench.md", "w"))
f:write(text)
f:close()
io.write("\n", text)
