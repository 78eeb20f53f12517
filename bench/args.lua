-- bench/args.lua - the command line of the Lua parts of the benchmark: "--name value" options among
-- positional arguments. usage: local opts, positional = dofile("bench/args.lua")(arg, {"save", ...})

return function(argv, names)
    local takes = {}
    for _, name in ipairs(names) do takes["--" .. name] = name end
    local opts, positional, i = {}, {}, 1
    while argv and argv[i] do
        local name = takes[argv[i]]
        if name then
            opts[name], i = argv[i + 1], i + 2
        else
            positional[#positional + 1], i = argv[i], i + 1
        end
    end
    for name, value in pairs(opts) do
        if value == "" then opts[name] = nil end   -- "" stands for none (the Makefile's empty --fair)
    end
    return opts, positional
end
