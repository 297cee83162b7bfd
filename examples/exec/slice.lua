-- slice.lua: a tensor-parallel rank's heads of a KV-cache block, cut
-- next to the value (Exec, docs/exec.md). The block is L layers x H
-- heads x D bytes, layer-major; input "L H D TP RANK"; the output is the
-- rank's H/TP heads of every layer, layer after layer: 1/TP of the bytes.
return function(value, input)
  local L, H, D, tp, rank = input:match('^(%d+) (%d+) (%d+) (%d+) (%d+)$')
  L, H, D, tp, rank = tonumber(L), tonumber(H), tonumber(D), tonumber(tp), tonumber(rank)
  if not L or tp == 0 or H % tp ~= 0 or rank >= tp or value:len() ~= L * H * D then
    error('input must be "L H D TP RANK" matching the block')
  end
  local per = H // tp
  local out = {}
  for l = 0, L - 1 do
    local first = (l * H + rank * per) * D
    out[#out + 1] = value:sub(first + 1, first + per * D)
  end
  return table.concat(out)
end
