-- ranking.lua: the one place that writes rankings. Not a script of its
-- own: it is compiled in front of every script that changes a ranking
-- (ranker/fold.lua; the gateway's delete.lua, forget_board.lua and
-- rank_rebuild.lua), which call the functions below and write no ranking
-- key themselves.
--
-- A ranking (board lb, gpu) is three keys (docs/internals.md):
--   kb:rank:<lb>:<gpu>      sorted set: user id -> best score in seconds
--   kb:rankinfo:<lb>:<gpu>  hash: user id -> "<sub id>:<submitted_ms>" of it
--   kb:rankorder:<lb>:<gpu> sorted set, every score 0, one member per user
--                           (rank_member): the ranking's order
-- The order is total: score, then submission time, then submission id
-- (then user id, which is unique). Members of equal score sort by their
-- bytes, and rank_member() writes each field at a fixed width in a form
-- whose bytes sort as its value, so ZRANGE kb:rankorder:<lb>:<gpu> a b is
-- the ranking's entries a..b and ZRANK a user's place. Deciding whether a
-- result beats a user's best is comparing two members, so the order is
-- written here once. Keys are built by K (the prelude made from
-- services/kb_keys.h, compiled in front of this library).

-- The keys of the ranking of lb on gpu.
local function rank_keys(lb, gpu)
  return {rank = K.rank(lb, gpu), info = K.rank_info(lb, gpu),
          order = K.rank_order(lb, gpu)}
end

-- Times and ids of a best whose kb:rankinfo cannot be read sort after any
-- real one of the same score.
local RANK_MS_UNKNOWN = '9999999999999999'
local RANK_ID_UNKNOWN = '00000000000000000000'

-- The member of a user's entry. score is a positive finite number (the
-- bytes of a positive IEEE-754 double, big-endian, sort as its value),
-- ms_s and id_s decimal text (ids may exceed 2^53: never numbers).
local function rank_member(score, ms_s, id_s, user)
  local bits = string.gsub(struct.pack('>d', score), '.', function(c)
    return string.format('%02x', string.byte(c))
  end)
  local ms = RANK_MS_UNKNOWN
  if ms_s and string.match(ms_s, '^%d+$') and #ms_s <= 16 then
    ms = string.rep('0', 16 - #ms_s) .. ms_s
  end
  local id = RANK_ID_UNKNOWN
  if id_s and string.match(id_s, '^%d+$') and #id_s <= 20 then
    id = string.rep('0', 20 - #id_s) .. id_s
  end
  return bits .. ':' .. ms .. ':' .. id .. ':' .. user
end

-- The member of user's current entry, or nil when the user is not ranked.
local function rank_current(k, user)
  local score = redis.call('ZSCORE', k.rank, user)
  if not score then
    return nil
  end
  local info = redis.call('HGET', k.info, user)
  local id, ms = nil, nil
  if info then
    id, ms = string.match(info, '^(%d+):(%d+)$')
  end
  return rank_member(tonumber(score), ms, id, user)
end

-- 1 when a result (score, ms_s, id_s) of user would replace the user's
-- current best (none, a higher score, or the same score later).
local function rank_beats(k, user, score, ms_s, id_s)
  local cur = rank_current(k, user)
  return cur == nil or rank_member(score, ms_s, id_s, user) < cur
end

-- Removes user from the ranking.
local function rank_drop(k, user)
  local cur = rank_current(k, user)
  if cur then
    redis.call('ZREM', k.order, cur)
  end
  redis.call('ZREM', k.rank, user)
  redis.call('HDEL', k.info, user)
end

-- Makes (score_s, id_s, ms_s) the user's entry; score_s is the exact text
-- of the score (it reads back as the same double).
local function rank_put(k, user, score_s, id_s, ms_s)
  rank_drop(k, user)
  redis.call('ZADD', k.rank, score_s, user)
  redis.call('HSET', k.info, user, id_s .. ':' .. ms_s)
  redis.call('ZADD', k.order, 0, rank_member(tonumber(score_s), ms_s, id_s, user))
end

-- Builds the order again from kb:rank and kb:rankinfo (rankings written
-- before kb:rankorder existed, or changed behind the library's back).
local function rank_rebuild(k)
  redis.call('DEL', k.order)
  local all = redis.call('ZRANGE', k.rank, 0, -1)
  for _, user in ipairs(all) do
    redis.call('ZADD', k.order, 0, rank_current(k, user))
  end
  return #all
end

-- The best of user's scored submissions on lb and gpu that are not
-- deleted, as a ranking entry, after one of them was deleted: the order
-- decides. Returns 1 when the ranking changed.
local function rank_repair(k, lb, gpu, user, deleted_id)
  local info = redis.call('HGET', k.info, user)
  if not info or string.match(info, '^(%d+):') ~= deleted_id then
    return 0
  end
  local best, best_entry = nil, nil
  for _, other in ipairs(redis.call('ZRANGE', K.subs_user_board(user, lb), 0, -1)) do
    local o = redis.call('HMGET', K.sub(other), 'gpu', 'status', 'score',
                         'submitted_ms', 'deleted_ms')
    local sc = tonumber(o[3])
    if o[1] == gpu and o[2] == 'done' and sc and sc > 0 and tonumber(o[4]) and
       not o[5] then
      local m = rank_member(sc, o[4], other, user)
      if not best or m < best then
        best, best_entry = m, {o[3], other, o[4]}
      end
    end
  end
  if best then
    rank_put(k, user, best_entry[1], best_entry[2], best_entry[3])
  else
    rank_drop(k, user)
  end
  return 1
end

-- Deletes the ranking.
local function rank_purge(k)
  redis.call('DEL', k.rank, k.info, k.order)
end
