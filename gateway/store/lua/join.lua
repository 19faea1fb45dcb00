-- join.lua: claims an invite code for a user, atomically.
--
-- KEYS[1] kb:invite:<code>
-- ARGV[1] user id   ARGV[2] user name   ARGV[3] now (epoch ms)
-- K.<name>(...) builds the other keys it names, as services/kb_keys.h
-- spells them (a prelude made from the header, compiled in front).
--
-- An invite is a hash: leaderboards (names joined by ","), created_ms, and
-- once claimed user_id, user_name, claimed_ms. A code is claimed once; the
-- same user claiming it again is fine (nothing changes). Claiming adds the
-- user to kb:lbaccess:<lb> of every board the code covers.
--
-- Returns {1, "lb1,lb2"} or {0, reason}.

local inv = redis.call('HMGET', KEYS[1], 'leaderboards', 'user_id')
if not inv[1] then
  return {0, 'invalid invite code'}
end
if inv[2] and inv[2] ~= ARGV[1] then
  return {0, 'invite code already claimed'}
end
if not inv[2] then
  redis.call('HSET', KEYS[1], 'user_id', ARGV[1], 'user_name', ARGV[2],
             'claimed_ms', ARGV[3])
end
for lb in string.gmatch(inv[1], '[^,]+') do
  redis.call('SADD', K.board_access(lb), ARGV[1])
end
return {1, inv[1]}
