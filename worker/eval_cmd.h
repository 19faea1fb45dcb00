/* kb_eval_cmd: `kb-worker eval`, one evaluation without Kafka or Redis
 * (eval_cmd.c). */
#ifndef KB_EVAL_CMD_H
#define KB_EVAL_CMD_H

/* Runs `kb-worker eval` with argv[0] = "eval" (settings loaded:
 * kb_setup_load). Returns the exit status: 0 when the submission passed,
 * 1 when it did not or the evaluation could not start, 2 for bad usage. */
int kb_eval_cmd(int argc, char **argv);

#endif
