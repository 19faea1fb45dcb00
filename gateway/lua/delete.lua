-- delete.lua: deletes a submission and repairs its owner's ranking.
--
-- The hash stays, marked status "deleted" with deleted_ms, so that a
-- Result that arrives later is not folded (ranker/fold.lua checks both);
-- the submission leaves every index. If it was its owner's best on its
-- (board, gpu), the best is recomputed from the owner's remaining scored
-- submissions there (same order as the ranking: score, submitted_ms, id),
-- or the owner leaves the ranking when none is left.
--
-- KEYS[1] kb:sub:<id>
-- ARGV[1] id   ARGV[2] the requesting user id ("" for an admin)
-- ARGV[3] now (epoch ms)
--
-- Returns {0, 404|403} or {1, lb, gpu, ranking_changed (0/1)}.

local key, id, who = KEYS[1], ARGV[1], ARGV[2]
local s = redis.call('HMGET', key, 'user_id', 'lb', 'gpu', 'status', 'deleted_ms',
                     'score')
local owner, lb, gpu = s[1], s[2], s[3]
if not owner or s[4] == 'deleted' or s[5] then
  return {0, 404}
end
if who ~= '' and who ~= owner then
  return {0, 403}
end
lb = lb or ''
gpu = gpu or ''
redis.call('HSET', key, 'status', 'deleted', 'deleted_ms', ARGV[3])
redis.call('ZREM', 'kb:subs:user:' .. owner, id)
redis.call('ZREM', 'kb:subs:user:' .. owner .. ':' .. lb, id)
redis.call('ZREM', 'kb:subs:lb:' .. lb, id)
redis.call('ZREM', 'kb:subs:all', id)
redis.call('ZREM', 'kb:queued:' .. gpu, id)
redis.call('SREM', 'kb:running:' .. gpu, id)
-- The score history (ranker/fold.lua writes its members from the same
-- id, score text, user, board and gpu).
if s[6] then
  redis.call('ZREM', 'kb:hist:' .. lb .. ':' .. gpu, id .. ':' .. s[6] .. ':' .. owner)
  redis.call('ZREM', 'kb:uhist:' .. owner, id .. ':' .. s[6] .. ':' .. lb .. ':' .. gpu)
end

local rank_key = 'kb:rank:' .. lb .. ':' .. gpu
local info_key = 'kb:rankinfo:' .. lb .. ':' .. gpu
local info = redis.call('HGET', info_key, owner)
if not info or string.match(info, '^(%d+):') ~= id then
  return {1, lb, gpu, 0}
end

-- Ids may exceed 2^53: compare them as decimal strings.
local function id_less(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end

local best, best_ms, best_id, best_text = nil, nil, nil, nil
local ids = redis.call('ZRANGE', 'kb:subs:user:' .. owner .. ':' .. lb, 0, -1)
for _, other in ipairs(ids) do
  local o = redis.call('HMGET', 'kb:sub:' .. other, 'gpu', 'status', 'score',
                       'submitted_ms', 'deleted_ms')
  local sc, ms = tonumber(o[3]), tonumber(o[4])
  if o[1] == gpu and o[2] == 'done' and sc and ms and not o[5] then
    if not best or sc < best or (sc == best and (ms < best_ms or
       (ms == best_ms and id_less(other, best_id)))) then
      best, best_ms, best_id, best_text = sc, ms, other, o[3]
    end
  end
end
if best then
  redis.call('ZADD', rank_key, best_text, owner)
  redis.call('HSET', info_key, owner, best_id .. ':' .. best_ms)
else
  redis.call('ZREM', rank_key, owner)
  redis.call('HDEL', info_key, owner)
end
return {1, lb, gpu, 1}
