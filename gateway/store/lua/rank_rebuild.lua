-- rank_rebuild.lua: builds a ranking's order again from its scores and
-- their submissions (rank_rebuild of ranker/ranking.lua, compiled in front
-- of this script), when a reader finds it out of step with them: rankings
-- written before kb:rankorder existed.
--
-- KEYS[1] kb:rank:<lb>:<gpu>   KEYS[2] kb:rankinfo:<lb>:<gpu>
-- KEYS[3] kb:rankorder:<lb>:<gpu>
--
-- Returns the number of entries.

return rank_rebuild({rank = KEYS[1], info = KEYS[2], order = KEYS[3]})
