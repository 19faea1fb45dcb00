-- submit.lua: admits one submission and records it, atomically.
--
-- The policy (user exists and is not banned; the platform accepts jobs;
-- the board is public or the user holds access; the hourly rate limit of
-- (board, user, category); the user's unfinished jobs on the gpu) is
-- decided and the submission recorded in one script, so two concurrent
-- submissions can never both take the last slot of a rate window or of
-- the cap, and a refused submission leaves nothing behind. The deadline
-- is checked by the caller (it lives in the problem set).
--
-- KEYS[1]  kb:next_sub_id          KEYS[2]  kb:user:<uid>
-- KEYS[3]  kb:lb:<lb>              KEYS[4]  kb:lbaccess:<lb>
-- KEYS[5]  kb:rl:<lb>              KEYS[6]  kb:rlw:<lb>:<category>:<uid>
-- KEYS[7]  kb:code:<sha256>        KEYS[8]  kb:subs:user:<uid>
-- KEYS[9]  kb:subs:user:<uid>:<lb> KEYS[10] kb:subs:lb:<lb>
-- KEYS[11] kb:subs:all             KEYS[12] kb:queued:<gpu>
-- KEYS[13] kb:admin                KEYS[14] kb:active:<uid>:<gpu>
--
-- ARGV[1] user id   ARGV[2] lb   ARGV[3] gpu   ARGV[4] mode
-- ARGV[5] category ("test" or "leaderboard")   ARGV[6] file name
-- ARGV[7] code sha256   ARGV[8] code   ARGV[9] now (epoch ms)
-- ARGV[10] "1" for an admin submission (skips stop, access, rate limit,
--          the cap on unfinished jobs)
-- ARGV[11] the default hourly limit of the category ("0": none)
-- ARGV[12] the most unfinished jobs a user may have on one gpu ("0": none)
-- ARGV[13] ms after which an unfinished job no longer counts for that
-- ARGV[14] seconds an unranked submission's code is kept ("0": for ever)
-- K.<name>(...) builds the other keys it names, as services/kb_keys.h
-- spells them (a prelude made from the header, compiled in front).
--
-- kb:active:<uid>:<gpu> holds the user's jobs on the gpu that were not
-- finished when last looked at (member id, score submitted_ms); the cap
-- counts those whose kb:sub status is still queued or running, and drops
-- the rest, so whoever finishes a job (ranker, gateway, owner) need not
-- know of it. A job lost for good stops counting after ARGV[13].
--
-- Code is stored once per content. A ranked submission's stays for good
-- (its ranking shows it); code only unranked submissions use expires
-- ARGV[14] seconds after its latest use.
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
  local cap = tonumber(ARGV[12]) or 0
  if cap > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[14], '-inf',
               '(' .. (now - tonumber(ARGV[13])))
    local open = 0
    for _, sid in ipairs(redis.call('ZRANGE', KEYS[14], 0, -1)) do
      local st = redis.call('HGET', K.sub(sid), 'status')
      if st == 'queued' or st == 'running' then
        open = open + 1
      else
        redis.call('ZREM', KEYS[14], sid)
      end
    end
    if open >= cap then
      return {0, 429, 'you have ' .. open .. ' unfinished submissions on ' ..
        gpu .. ' (at most ' .. cap .. '); submit again when one has finished',
        30000}
    end
  end
end

local id = redis.call('INCR', KEYS[1])
local code_ttl = tonumber(ARGV[14]) or 0
if mode == 'leaderboard' or code_ttl == 0 then
  redis.call('SET', KEYS[7], ARGV[8], 'NX')
  redis.call('PERSIST', KEYS[7])
elseif not redis.call('SET', KEYS[7], ARGV[8], 'NX', 'EX', code_ttl) then
  local left = redis.call('TTL', KEYS[7])
  if left >= 0 and left < code_ttl then
    redis.call('EXPIRE', KEYS[7], code_ttl)
  end
end
redis.call('HSET', K.sub(id), 'user_id', uid, 'user_name', u[1],
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
if not admin and (tonumber(ARGV[12]) or 0) > 0 then
  redis.call('ZADD', KEYS[14], now, id)
  redis.call('PEXPIRE', KEYS[14], ARGV[13])
end
return {1, id, u[1]}
