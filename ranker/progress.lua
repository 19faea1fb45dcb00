-- progress.lua: records a submission's current stage, atomically.
--
-- KEYS[1] kb:sub:<id>
-- ARGV[1] stage ("compiling", "testing", ...)   ARGV[2] stage_ms
--
-- A progress event never regresses a finished submission: once fold.lua has
-- set status "done", a late or re-delivered progress is ignored.
--
-- Returns 1 applied, 0 ignored.

local sub_key = KEYS[1]
if redis.call('HGET', sub_key, 'status') == 'done' then
  return 0
end
redis.call('HSET', sub_key, 'stage', ARGV[1], 'stage_ms', ARGV[2],
           'status', 'running')
return 1
