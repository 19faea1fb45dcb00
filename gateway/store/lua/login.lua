-- login.lua: the steps of a CLI login between /auth/init and the link,
-- atomically, on the login's record.
--
-- KEYS[1] kb:clipending:<cli_id>: a hash made by /auth/init with
--         provider, created_ms and, when the CLI proved an account with
--         its current CLI id, reset_user; it expires (KB_AUTH_STATE_TTL_S).
-- ARGV[1] "start" or "claim"   ARGV[2] provider
-- ARGV[3] the SHA-256 (hex) of the nonce of the browser's login cookie
--
-- start: the browser opened the login's start page, which set a fresh
--   cookie: its nonce becomes the login's (opening the page again replaces
--   it, so only the browser that opened it last can finish).
--   Returns {1, seconds the login has left}.
-- claim: the provider sent a browser back: its cookie must hold the
--   login's nonce. The login is used up here, before anyone asks the
--   provider, so a state and a cookie serve one callback only.
--   Returns {1, seconds the login has left}.
-- Refusals: {0, http_status, reason}.

local unknown = 'unknown or expired CLI id: run the login again'
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then
  return {0, 400, unknown}
end
local p = redis.call('HMGET', KEYS[1], 'provider', 'nonce', 'claimed')
if p[1] ~= ARGV[2] then
  return {0, 400, 'this CLI id was issued for another provider'}
end
if p[3] then
  return {0, 400, 'this login was used already: run the login again'}
end
if ARGV[1] == 'start' then
  redis.call('HSET', KEYS[1], 'nonce', ARGV[3])
  return {1, redis.call('TTL', KEYS[1])}
end
if not p[2] or p[2] ~= ARGV[3] then
  return {0, 403, 'this sign-in was not started in this browser: open the ' ..
    'link the CLI printed in the browser you sign in with'}
end
redis.call('HSET', KEYS[1], 'claimed', '1')
return {1, redis.call('TTL', KEYS[1])}
