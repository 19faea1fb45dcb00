-- lease.lua: who evaluates a submission (services/kb_lease.h).
--
-- KEYS[1] kb:lease:<id>, a hash: owner (worker name), state ("run",
-- "done", "free"), until_ms (a "run" lease's end, on this server's
-- clock), attempts (runs that ended with their worker gone: crashed or
-- hung). Times come from TIME, so the workers' clocks do not matter.
--
-- ARGV[1] is the operation:
--   take worker ttl_ms max_attempts -> {verdict, attempts, owner}
--     verdict "done" (evaluated already), "busy" (another worker's run
--     lease has not ended), "giveup" (attempts reached max_attempts: the
--     caller now holds the lease to publish the give-up) or "ok" (the
--     caller holds it). worker is a token unique to one worker process:
--     a run lease of another token that ended without being finished or
--     released counts one attempt (its process crashed, hung or was
--     stopped); the caller's own lease is taken again without counting.
--   renew worker ttl_ms -> 1 (held, extended) or 0 (lost)
--   finish worker keep_s -> 1, or 0 when the caller no longer held it;
--     the lease says "done" for keep_s seconds either way
--   release worker -> 1 or 0 (free again, attempts unchanged: a drain)
--   peek -> 1 when a worker holds a run lease or the job is done, else 0
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, op = KEYS[1], ARGV[1]
local f = redis.call('HMGET', key, 'owner', 'state', 'until_ms', 'attempts')
local owner, state = f[1], f[2]
local until_ms, attempts = tonumber(f[3]) or 0, tonumber(f[4]) or 0

if op == 'peek' then
  if state == 'done' or (state == 'run' and until_ms > now) then
    return 1
  end
  return 0
end

local worker = ARGV[2]
if op == 'take' then
  local ttl, max = tonumber(ARGV[3]), tonumber(ARGV[4])
  if state == 'done' then
    return {'done', attempts, owner or ''}
  end
  if state == 'run' and owner ~= worker then
    if until_ms > now then
      return {'busy', attempts, owner or ''}
    end
    attempts = attempts + 1
  end
  redis.call('HSET', key, 'owner', worker, 'state', 'run',
             'until_ms', now + ttl, 'attempts', attempts)
  if attempts >= max then
    return {'giveup', attempts, worker}
  end
  return {'ok', attempts, worker}
end

local mine = state == 'run' and owner == worker
if op == 'renew' then
  if not mine then
    return 0
  end
  redis.call('HSET', key, 'until_ms', now + tonumber(ARGV[3]))
  return 1
end
if op == 'finish' then
  if state ~= 'done' then
    redis.call('HSET', key, 'owner', worker, 'state', 'done', 'until_ms', now)
  end
  redis.call('EXPIRE', key, tonumber(ARGV[3]))
  if mine then
    return 1
  end
  return 0
end
if op == 'release' then
  if not mine then
    return 0
  end
  redis.call('HSET', key, 'state', 'free', 'until_ms', now)
  return 1
end
return redis.error_reply('lease.lua: unknown operation ' .. tostring(op))
