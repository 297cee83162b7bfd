-- forbidden.lua: tries every thing a module may not do and returns the
-- names of those that worked, comma-separated: "" when the sandbox
-- refused them all (docs/exec.md, "The sandbox").
return function(value, input)
  local got = {}
  local function worked(name, ok) if ok then got[#got + 1] = name end end
  worked('io', io ~= nil)
  worked('os', os ~= nil)
  worked('require', require ~= nil)
  worked('package', package ~= nil)
  worked('debug', debug ~= nil)
  worked('coroutine', coroutine ~= nil)
  worked('dofile', dofile ~= nil)
  worked('loadfile', loadfile ~= nil)
  worked('print', print ~= nil)
  worked('collectgarbage', collectgarbage ~= nil)
  worked('string.dump', string.dump ~= nil or ('').dump ~= nil)
  worked('load of bytecode', load('\27LuaS\0\25\147\r\n\26\n') ~= nil)
  worked('write the value', pcall(function() value.x = 1 end))
  worked('the value\'s metatable', getmetatable(value) ~= false)
  return table.concat(got, ',')
end
