-- The keys check's fixture (check_layout.py keys-selftest): each line
-- ending in the comment "layout: expect" must be reported once, and no
-- other line.
-- Comments may name keys: KEYS[1] kb:sub:<id>, --[[ kb:rank ]] too.
--[[ A long comment: 'kb:sub:' .. id
     redis.call('DEL', 'kb:rank:' .. lb) ]]
local id, lb, gpu = ARGV[1], ARGV[2], ARGV[3]
local good = K.sub(id)
local rank = K.rank(lb, gpu)
local a, b = string.match(rank, K_PATTERN.rank)
local note = 'a -- kb:sub: is not a comment here' -- layout: expect
local key = 'kb:sub:' .. id -- layout: expect
local other = "kb:rank:" .. lb .. ':' .. gpu -- layout: expect
local long = [[kb:rankinfo:]] .. lb -- layout: expect
local longer = [==[]] kb:rankorder:]==] .. lb -- layout: expect
local typo = K.subs(id) -- layout: expect
local pat = K_PATTERN.rank_info -- layout: expect
local field = good.K.sub -- a field named K of something else: fine
local esc = 'it\'s kb:code:' .. id -- layout: expect
return {good, rank, a, b, note, key, other, long, longer, typo, pat, field, esc}
