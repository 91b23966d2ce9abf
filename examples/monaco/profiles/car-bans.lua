-- The car profile shipped with OSRM (osrm-bindings' share/profiles/car.lua, BSD 2-Clause license,
-- Copyright (c) Project OSRM contributors), with bridges as a class of ways and the combinations of
-- classes that a request to the Monaco demo may exclude together.
--
-- roadkit prepare and roadkit osrm-build put the shipped profiles on Lua's path, so that require('car')
-- finds the stock profile. With osrm-extract run by hand, do the same:
--   LUA_PATH="$(python -c 'import osrm, os; print(os.path.dirname(osrm.__file__))')/share/profiles/?.lua;;"

local car = require('car')

local setup = car.setup
function car.setup()
  local profile = setup()
  profile.classes = Sequence { 'toll', 'motorway', 'ferry', 'restricted', 'tunnel', 'bridge' }
  -- OSRM applies an exclude only for a combination listed here, and at most 6 of them (osrm-extract
  -- refuses 8 and ignores a 7th): each ban alone but tunnel, and Road2's autoroute + tunnel [+ pont].
  profile.excludable = Sequence {
    Set { 'motorway' },
    Set { 'toll' },
    Set { 'ferry' },
    Set { 'bridge' },
    Set { 'motorway', 'tunnel' },
    Set { 'motorway', 'tunnel', 'bridge' },
  }
  return profile
end

local process_way = car.process_way
function car.process_way(profile, way, result, relations)
  process_way(profile, way, result, relations)
  local bridge = way:get_value_by_key('bridge')
  if bridge and bridge ~= 'no' then
    result.forward_classes['bridge'] = true
    result.backward_classes['bridge'] = true
  end
end

return car
