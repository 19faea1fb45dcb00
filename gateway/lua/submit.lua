-- submit.lua: admits one submission and records it, atomically.
--
-- The policy (user exists and is not banned; the platform accepts jobs;
-- the board is public or the user holds access; the hourly rate limit of
-- (board, user, category)) is decided and the submission recorded in one
-- script, so two concurrent submissions can never both take the last slot
-- of a rate window, and a refused submission leaves nothing behind. The
-- deadline is checked by the caller (it lives in the problem set).
--
-- KEYS[1]  kb:next_sub_id          KEYS[2]  kb:user:<uid>
-- KEYS[3]  kb:lb:<lb>              KEYS[4]  kb:lbaccess:<lb>
-- KEYS[5]  kb:rl:<lb>              KEYS[6]  kb:rlw:<lb>:<category>:<uid>
-- KEYS[7]  kb:code:<sha256>        KEYS[8]  kb:subs:user:<uid>
-- KEYS[9]  kb:subs:user:<uid>:<lb> KEYS[10] kb:subs:lb:<lb>
-- KEYS[11] kb:subs:all             KEYS[12] kb:queued:<gpu>
-- KEYS[13] kb:admin
--
-- ARGV[1] user id   ARGV[2] lb   ARGV[3] gpu   ARGV[4] mode
-- ARGV[5] category ("test" or "leaderboard")   ARGV[6] file name
-- ARGV[7] code sha256   ARGV[8] code   ARGV[9] now (epoch ms)
-- ARGV[10] "1" for an admin submission (skips stop, access, rate limit)
-- ARGV[11] the default hourly limit of the category ("0": none)
--
-- The submission hash is kb:sub:<id>, named from the new id (so this
-- script is for a single Redis, not a cluster).
--
-- Returns {1, id, user_name} or {0, http_status, detail, retry_after_ms}.

local uid, lb, gpu, mode, cat = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local now = tonumber(ARGV[9])
local admin = ARGV[10] == '1'
local window = 3600000

local u = redis.call('HMGET', KEYS[2], 'name', 'banned')
if not u[1] then
  return {0, 401, 'unknown user', 0}
end
if u[2] and u[2] ~= '0' and u[2] ~= '' then
  return {0, 403, 'user is banned', 0}
end

local limit = 0
if not admin then
  if redis.call('HGET', KEYS[13], 'accepting') == '0' then
    return {0, 503, 'the platform is not accepting submissions right now ' ..
      '(maintenance); please try again later', 0}
  end
  if redis.call('HGET', KEYS[3], 'visibility') == 'closed' and
     redis.call('SISMEMBER', KEYS[4], uid) == 0 then
    return {0, 403, 'leaderboard ' .. lb .. ' is closed; join it with an ' ..
      'invite code first (POST /user/join)', 0}
  end
  limit = tonumber(redis.call('HGET', KEYS[5], cat) or ARGV[11]) or 0
  if limit > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now - window)
    if redis.call('ZCARD', KEYS[6]) >= limit then
      local oldest = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
      local retry = tonumber(oldest[2]) + window - now
      if retry < 1 then
        retry = 1
      end
      return {0, 429, 'rate limit reached: at most ' .. limit .. ' ' .. cat ..
        ' submissions per hour on ' .. lb, retry}
    end
  end
end

local id = redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[7], ARGV[8], 'NX')
redis.call('HSET', 'kb:sub:' .. id, 'user_id', uid, 'user_name', u[1],
  'lb', lb, 'gpu', gpu, 'mode', mode, 'file_name', ARGV[6],
  'code_sha', ARGV[7], 'submitted_ms', ARGV[9], 'status', 'queued',
  'stage', 'queued', 'stage_ms', ARGV[9])
redis.call('ZADD', KEYS[8], now, id)
redis.call('ZADD', KEYS[9], now, id)
redis.call('ZADD', KEYS[10], now, id)
redis.call('ZADD', KEYS[11], now, id)
redis.call('ZADD', KEYS[12], id, id)
if limit > 0 then
  redis.call('ZADD', KEYS[6], now, id)
  redis.call('PEXPIRE', KEYS[6], window)
end
return {1, id, u[1]}
