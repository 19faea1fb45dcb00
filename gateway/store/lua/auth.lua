-- auth.lua: resolves an X-Popcorn-Cli-Id in one round trip.
--
-- KEYS[1] kb:cli:<cli_id>
-- K.<name>(...) builds the other keys it names, as services/kb_keys.h
-- spells them (a prelude made from the header, compiled in front).
--
-- Returns {} when the CLI id or its user is unknown, else
-- {user_id, name, banned} (banned "0"/"" or anything else for banned).

local uid = redis.call('GET', KEYS[1])
if not uid then
  return {}
end
local u = redis.call('HMGET', K.user(uid), 'name', 'banned')
if not u[1] then
  return {}
end
return {uid, u[1], u[2] or '0'}
