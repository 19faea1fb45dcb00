-- progress.lua: records a submission's current stage, atomically.
--
-- KEYS[1] kb:sub:<id>
-- ARGV[1] stage ("compiling", "testing", ...)   ARGV[2] stage_ms
--
-- A progress event never regresses a finished or deleted submission: once
-- fold.lua has set status "done", or its owner deleted it (status
-- "deleted", deleted_ms set), a late or re-delivered progress is ignored.
-- stage_ms is when the stage began: a progress of the stage already
-- recorded changes nothing (the secret run's Progress arrives under the
-- ranked run's name, and its start must not show).
--
-- Returns 1 applied, 0 ignored.

local sub_key = KEYS[1]
local cur = redis.call('HMGET', sub_key, 'status', 'deleted_ms', 'stage')
if cur[1] == 'done' or cur[1] == 'deleted' or cur[2] then
  return 0
end
if cur[1] == 'running' and cur[3] == ARGV[1] then
  return 0
end
redis.call('HSET', sub_key, 'stage', ARGV[1], 'stage_ms', ARGV[2],
           'status', 'running')
return 1
