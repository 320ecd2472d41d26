-- Globals the scripts use, as locals: Lua 5.1 looks globals up by name on
-- every use, locals are registers.
local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
local tonumber, unpack = tonumber, unpack
