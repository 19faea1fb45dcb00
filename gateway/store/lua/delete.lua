-- delete.lua: deletes a submission and repairs its owner's ranking.
--
-- The hash stays, marked status "deleted" with deleted_ms, so that a
-- Result that arrives later is not folded (ranker/fold.lua checks both);
-- the submission leaves every index. If it was its owner's best on its
-- (board, gpu), rank_repair() of ranker/ranking.lua (compiled in front of
-- this script: this script writes no ranking key itself) makes the best
-- of the owner's remaining scored submissions there their entry, or takes
-- the owner out of the ranking when none is left.
--
-- KEYS[1] kb:sub:<id>
-- ARGV[1] id   ARGV[2] the requesting user id ("" for an admin)
-- ARGV[3] now (epoch ms)
-- K.<name>(...) builds the other keys it names, as services/kb_keys.h
-- spells them (a prelude made from the header, compiled in front).
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
redis.call('ZREM', K.subs_user(owner), id)
redis.call('ZREM', K.subs_user_board(owner, lb), id)
redis.call('ZREM', K.subs_board(lb), id)
redis.call('ZREM', K.subs_all(), id)
redis.call('ZREM', K.queued(gpu), id)
redis.call('SREM', K.running(gpu), id)
-- The score history (ranker/fold.lua writes its members from the same
-- id, score text, user, board and gpu).
if s[6] then
  redis.call('ZREM', K.hist(lb, gpu), id .. ':' .. s[6] .. ':' .. owner)
  redis.call('ZREM', K.user_hist(owner), id .. ':' .. s[6] .. ':' .. lb .. ':' .. gpu)
end

-- The owner's entry, if this was their best, is the ranker's to repair
-- (ranking.lua, compiled in front of this script).
return {1, lb, gpu, rank_repair(rank_keys(lb, gpu), lb, gpu, owner, id)}
