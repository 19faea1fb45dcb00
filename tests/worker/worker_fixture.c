#include "worker_fixture.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb_util.h"
#include "pbutil.h"

void wf_add_file(Kb__Task *t, const char *name, const char *content)
{
	Kb__TaskFile *f = kb__xcalloc(1, sizeof(*f));

	kb__task_file__init(f);
	f->name = kb__xstrdup(name);
	f->content.len = strlen(content);
	f->content.data = (uint8_t *)kb__xstrdup(content);
	kb__pb_append(&t->files, &t->n_files, f);
}

void wf_set_config(Kb__Task *t, const char *key, const char *value)
{
	Kb__Task__ConfigEntry *e;

	for (size_t i = 0; i < t->n_config; i++)
		if (strcmp(t->config[i]->key, key) == 0) {
			kb__pb_set_str(&t->config[i]->value, value);
			return;
		}
	e = kb__xcalloc(1, sizeof(*e));
	kb__task__config_entry__init(e);
	e->key = kb__xstrdup(key);
	e->value = kb__xstrdup(value);
	kb__pb_append(&t->config, &t->n_config, e);
}

Kb__Submission *wf_submission(const char *lang, Kb__Mode mode)
{
	static const char *const tests[] = {"size: 1; seed: 11",
					    "size: 2; seed: 12"};
	static const char *const benches[] = {"size: 3; seed: 13",
					      "size: 4; seed: 14"};
	Kb__Submission *s = kb__xcalloc(1, sizeof(*s));
	Kb__Task *t = kb__xcalloc(1, sizeof(*t));

	kb__submission__init(s);
	kb__task__init(t);
	s->id = 42;
	s->user_id = kb__xstrdup("u1");
	s->user_name = kb__xstrdup("alice");
	s->leaderboard = kb__xstrdup("fixture");
	s->gpu = kb__xstrdup("CPU");
	s->mode = mode;
	s->file_name = kb__xstrdup("submission.c");
	s->code.data = (uint8_t *)kb__xstrdup("int x;");
	s->code.len = 6;
	s->has_secret_seed = mode == KB__MODE__MODE_LEADERBOARD;
	s->secret_seed = s->has_secret_seed ? WF_SECRET : 0;
	s->task = t;
	t->lang = kb__xstrdup(lang);
	t->ranking_by = kb__xstrdup("mean");
	t->test_timeout = 7;
	t->benchmark_timeout = 8;
	t->ranked_timeout = 9;
	for (size_t i = 0; i < 2; i++) {
		kb__pb_append(&t->tests, &t->n_tests, kb__xstrdup(tests[i]));
		kb__pb_append(&t->benchmarks, &t->n_benchmarks,
			      kb__xstrdup(benches[i]));
	}
	wf_add_file(t, "eval.c", "int main(void) { return 0; }\n");
	wf_add_file(t, "submission.c", "@SUBMISSION@");
	if (strcmp(lang, "py") == 0)
		wf_set_config(t, "main", "eval.c");
	else {
		wf_set_config(t, "sources", "eval.c\nsubmission.c");
		wf_set_config(t, "loader", "child");
	}
	return s;
}

char *wf_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *path = kb__xasprintf("%s/kbw-test-XXXXXX",
				   base && *base ? base : "/tmp");

	if (!mkdtemp(path)) {
		free(path);
		return NULL;
	}
	return path;
}

static void drain(int fd, struct kb_buf *b, int *open)
{
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n > 0)
		kb_buf_append(b, buf, (size_t)n);
	else
		*open = 0;
}

int wf_run(char *const argv[], char *const env_extra[], char **out, char **err,
	   double *wall_s)
{
	int po[2], pe[2], status = -1, oo = 1, eo = 1;
	struct kb_buf bo = {0}, be = {0};
	const double t0 = kb_mono_s();
	pid_t pid;

	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		for (size_t i = 0; env_extra && env_extra[i]; i++)
			putenv(env_extra[i]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	while (oo || eo) {
		struct pollfd p[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};

		if (poll(p, 2, -1) < 0)
			continue;
		if (oo && p[0].revents)
			drain(po[0], &bo, &oo);
		if (eo && p[1].revents)
			drain(pe[0], &be, &eo);
	}
	close(po[0]);
	close(pe[0]);
	waitpid(pid, &status, 0);
	if (wall_s)
		*wall_s = kb_mono_s() - t0;
	kb_buf_append(&bo, "", 0);
	kb_buf_append(&be, "", 0);
	*out = bo.data ? bo.data : kb__xstrdup("");
	*err = be.data ? be.data : kb__xstrdup("");
	return status;
}

int wf_copy_file(const char *src, const char *dst)
{
	char *data;
	size_t len;

	if (kb_read_file(src, SIZE_MAX, &data, &len) < 0)
		return -1;
	if (kb_write_file(dst, data, len, 0644) < 0) {
		free(data);
		return -1;
	}
	free(data);
	return 0;
}
