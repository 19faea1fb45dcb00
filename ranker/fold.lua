-- fold.lua: folds one final Result into Redis, atomically and idempotently.
-- The key and field layout is the contract in docs/internals.md; the C side
-- (ranker/kb_foldargs.c) builds the arguments.
--
-- KEYS[1] kb:res:<id>:<gpu>        the packed Result; its presence marks
--                                  the (submission, gpu) as folded
-- KEYS[2] kb:sub:<id>              the submission hash the gateway created
-- KEYS[3] kb:rank:<lb>:<gpu>       sorted set: user id -> best seconds
-- KEYS[4] kb:rankinfo:<lb>:<gpu>   hash: user id -> "<sub id>:<submitted_ms>"
-- KEYS[5] kb:rankorder:<lb>:<gpu>  the ranking's order (ranking.lua, which
--                                  is compiled in front of this script)
-- KEYS[6] kb:hist:<lb>:<gpu>       sorted set: every scored Result of the
--                                  board, "<id>:<score>:<user>" by done_ms
-- KEYS[7] kb:uhist:<user>          sorted set: every scored Result of the
--                                  user, "<id>:<score>:<lb>:<gpu>" by done_ms
--
-- ARGV[1] packed Result      ARGV[2] submission id (decimal)
-- ARGV[3] user id            ARGV[4] mode ("leaderboard", "test", ...)
-- ARGV[5] verdict ("passed", "failed", ...)
-- ARGV[6] has_score ("1" or "0", decided by the C side from the Result)
-- ARGV[7] score in seconds, text that reads back as the exact double
--         (the shortest of %.15g/%.16g/%.17g; "" when not scored)
-- ARGV[8] submitted_ms       ARGV[9] done_ms
-- K_PATTERN.rank (the key prelude made from services/kb_keys.h, compiled
-- in front) reads the board and gpu back from KEYS[3].
--
-- Every value written comes from ARGV (never TIME), so a re-delivered Result
-- is byte-identical in effect; and it is not applied at all, because
-- KEYS[1] exists by then.
--
-- Returns 0 already folded or deleted (nothing changed), 1 folded, 2 folded
-- and a new personal best.

local res_key, sub_key, rank_key, info_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local order_key = KEYS[5]
local packed, id, user, mode, verdict = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local has_score, score_s, submitted_s, done_s = ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local hist_key, uhist_key = KEYS[6], KEYS[7]

if redis.call('EXISTS', res_key) == 1 then
  return 0
end

-- Redis does not roll a script back when a command fails half-way, so
-- everything that could fail is checked before the first write: a key of
-- the wrong type is reported, and nothing is written.
for _, kt in ipairs({{sub_key, 'hash'}, {rank_key, 'zset'}, {info_key, 'hash'},
                     {order_key, 'zset'}, {hist_key, 'zset'}, {uhist_key, 'zset'}}) do
  local t = redis.call('TYPE', kt[1])['ok']
  if t ~= 'none' and t ~= kt[2] then
    return redis.error_reply('WRONGTYPE ' .. kt[1] .. ' is a ' .. t .. ', not a ' .. kt[2])
  end
end

-- A submission its owner (or an admin) deleted stays out of every ranking,
-- even when its Result arrives after the deletion: nothing is written, not
-- even the Result, so the outcome is the same as for a duplicate (0). The
-- gateway sets status "deleted" and deleted_ms; a late Progress may have
-- overwritten the status since (progress.lua), deleted_ms it cannot.
local gone = redis.call('HMGET', sub_key, 'status', 'deleted_ms')
if gone[1] == 'deleted' or gone[2] then
  return 0
end

redis.call('SET', res_key, packed)

-- Lua numbers are doubles and the score's text round-trips exactly, so
-- comparing tonumber() values is exact; ZADD is given the original text.
local score = tonumber(score_s)
local submitted = tonumber(submitted_s)
if submitted == nil or submitted <= 0 then
  -- A Result without submitted_at_ms: the gateway's record holds the same
  -- clock's value, and it never changes, so folding stays deterministic.
  local s = redis.call('HGET', sub_key, 'submitted_ms')
  if s and tonumber(s) then
    submitted_s, submitted = s, tonumber(s)
  end
end
local scored = has_score == '1' and mode == 'leaderboard' and verdict == 'passed'
  and score ~= nil and score == score and score > 0 and score < math.huge
  and submitted ~= nil and user ~= ''

if scored then
  redis.call('HSET', sub_key, 'status', 'done', 'verdict', verdict,
             'done_ms', done_s, 'score', score_s)
  -- The history (append-only; the web pages plot it): every scored
  -- Result, not only improvements, so that readers derive the record and
  -- each user's progress as running minima over time, and the set does
  -- not depend on the order Results were folded in. Members are built
  -- from ARGV alone (a re-fold, which cannot happen past the EXISTS
  -- check, would add nothing). gateway/store/lua/delete.lua removes a deleted
  -- submission's members, built the same way.
  local when = tonumber(done_s)
  if when == nil or when <= 0 then
    when = submitted
  end
  redis.call('ZADD', hist_key, when, id .. ':' .. score_s .. ':' .. user)
  local lb, gpu = string.match(rank_key, K_PATTERN.rank)
  redis.call('ZADD', uhist_key, when, id .. ':' .. score_s .. ':' .. lb ..
             ':' .. gpu)
else
  redis.call('HSET', sub_key, 'status', 'done', 'verdict', verdict,
             'done_ms', done_s)
  return 1
end

-- The order decides (ranking.lua): a lower score, or the same score
-- submitted earlier, or at the same time with a lower id.
local k = {rank = rank_key, info = info_key, order = order_key}
if not rank_beats(k, user, score, submitted_s, id) then
  return 1
end
rank_put(k, user, score_s, id, submitted_s)
return 2
