-- link.lua: links a CLI id to an OAuth-authenticated user (the last step
-- of /auth/cli/{provider}), atomically.
--
-- KEYS[1] kb:clipending:<cli_id>  (claimed by login.lua)
-- KEYS[2] kb:user:<user_id>       KEYS[3] kb:cli:<cli_id>
-- ARGV[1] user id   ARGV[2] name   ARGV[3] cli id   ARGV[4] provider
-- ARGV[5] "1" to reset (move an existing account to this CLI id)
-- ARGV[6] now (epoch ms)
-- K.<name>(...) builds the other keys it names, as services/kb_keys.h
-- spells them (a prelude made from the header, compiled in front).
--
-- A reset replaces an account's CLI id, so it needs more than a login at
-- the provider (which a victim can be talked into finishing): /auth/init
-- must have been called with the account's current CLI id (reset_user).
-- Without reset, only an account without a CLI id gets one.
--
-- Returns {1} or {0, status, reason}.

if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then
  return {0, 400, 'unknown or expired CLI id: run the login again'}
end
local pending = redis.call('HMGET', KEYS[1], 'provider', 'claimed',
                           'reset_user')
if pending[1] ~= ARGV[4] or pending[2] ~= '1' then
  return {0, 400, 'unknown or expired CLI id: run the login again'}
end
local u = redis.call('HMGET', KEYS[2], 'name', 'cli_id')
if ARGV[5] == '1' then
  if not u[1] then
    return {0, 404, 'no account to reset: register without reset first'}
  end
  if pending[3] ~= ARGV[1] then
    return {0, 403, 'a reset must be started with this account\'s current ' ..
      'CLI id (X-Popcorn-Cli-Id on /auth/init); without it, ask an admin'}
  end
elseif u[2] and u[2] ~= '' then
  return {0, 409, 'this account already has a CLI id; log in with reset ' ..
    'to replace it'}
end
if u[2] and u[2] ~= '' then
  redis.call('DEL', K.cli(u[2]))
end
if not u[1] then
  redis.call('HSET', KEYS[2], 'name', ARGV[2], 'created_ms', ARGV[6],
             'banned', '0')
end
redis.call('HSET', KEYS[2], 'cli_id', ARGV[3], 'provider', ARGV[4])
redis.call('SET', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[1])
redis.call('SADD', K.users(), ARGV[1])
return {1}
