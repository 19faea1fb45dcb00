-- forget_board.lua: forgets a deleted board, atomically, so that a board
-- made later under the same name starts afresh.
--
-- KEYS[1] kb:lb:<name>          KEYS[2] kb:lbaccess:<name>
-- KEYS[3] kb:invites:lb:<name>  KEYS[4] kb:rl:<name>
-- KEYS[5] kb:lbdyn              KEYS[6] kb:lbdeleted
-- ARGV[1] the board's name   ARGV[2] "1" to drop its rankings too
-- ARGV[3..] the board's gpus
-- K.<name>(...) builds the other keys it names, as services/kb_keys.h
-- spells them (a prelude made from the header, compiled in front).
--
-- The board's record goes and its secret with it (a board made again gets
-- a new one), so do the access it granted, its rate limits and its place
-- in every invite: an invite for it alone goes, one for other boards too
-- keeps those. Its name is marked deleted for every gateway. Dropping the
-- rankings (rank_purge of ranker/ranking.lua, compiled in front of this
-- script) also drops the board's score history and submission index, so that a board made
-- again under the name starts without them.
--
-- Returns 1.

for _, code in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local key = K.invite(code)
  local lbs = redis.call('HGET', key, 'leaderboards')
  if lbs then
    local keep = {}
    for lb in string.gmatch(lbs, '[^,]+') do
      if lb ~= ARGV[1] then
        keep[#keep + 1] = lb
      end
    end
    if #keep == 0 then
      redis.call('DEL', key)
    else
      redis.call('HSET', key, 'leaderboards', table.concat(keep, ','))
    end
  end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
redis.call('HDEL', KEYS[5], ARGV[1])
redis.call('SADD', KEYS[6], ARGV[1])
if ARGV[2] == '1' then
  for i = 3, #ARGV do
    rank_purge(rank_keys(ARGV[1], ARGV[i]))
    redis.call('DEL', K.hist(ARGV[1], ARGV[i]))
  end
  redis.call('DEL', K.subs_board(ARGV[1]))
end
return 1
