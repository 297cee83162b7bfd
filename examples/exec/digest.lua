-- digest.lua: a 64-bit FNV-1a of the value (input "" or "FIRST LAST",
-- 1-based inclusive), as 16 hex digits: what a scheduler asks to know a
-- block is the one it thinks, for 16 bytes instead of the block.
return function(value, input)
  local first, last = input:match('^(%d+) (%d+)$')
  first, last = tonumber(first) or 1, tonumber(last) or value:len()
  local h = -3750763034362895579	-- 0xcbf29ce484222325 as a signed integer
  local prime = 1099511628211
  for at = first, last, 4096 do
    local chunk = value:sub(at, math.min(at + 4095, last))
    for i = 1, #chunk do
      h = (h ~ chunk:byte(i)) * prime	-- integers wrap: the 64-bit product
    end
  end
  return string.format('%016x', h)
end
