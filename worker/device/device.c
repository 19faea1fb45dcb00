/* kb_device: see device.h. The table of families and what asks it. */
#include "device.h"

#include <stdio.h>
#include <string.h>

/* In the order kb_device_family_for asks them: NVIDIA last, as it claims
 * every name. A new family is one line here (and its extern in
 * device.h). */
static const struct kb_device_family *const families[] = {
	&kb_device_cpu,
	&kb_device_amd,
	&kb_device_nvidia,
};

#define NFAMILIES (sizeof(families) / sizeof(families[0]))

const struct kb_device_family *kb_device_family_for(const char *gpu)
{
	for (size_t i = 0; i + 1 < NFAMILIES; i++)
		if (families[i]->claims(gpu))
			return families[i];
	return families[NFAMILIES - 1];
}

int kb_device_setup(const struct kb_device_cfg *c, struct kb_device *d)
{
	memset(d, 0, sizeof(*d));
	d->family = kb_device_family_for(c->gpu);
	d->info.family = d->family;
	d->info.minor = -1;
	return d->family->setup(c, d);
}

const char *kb_device_arch(const struct kb_device *d, unsigned toolchain)
{
	if (!d->family || !toolchain || d->family->toolchain != toolchain ||
	    !d->arch[0])
		return NULL;
	return d->arch;
}

int kb_device_dev_node(const struct kb_device_family *own, int restrict_,
		       int node, const char *entry, char *path,
		       size_t path_size)
{
	for (size_t i = 0; i < NFAMILIES; i++) {
		const struct kb_device_family *f = families[i];

		if (f->dev_node(entry, restrict_, f == own ? node : -1, path,
				path_size))
			return 1;
	}
	return 0;
}

enum kb_device_watch_result kb_device_watch_end(struct kb_device_watch *w,
						char *why, size_t why_size)
{
	if (why_size)
		why[0] = '\0';
	if (!w) {
		snprintf(why, why_size, "no device fault watch");
		return KB_DEVICE_WATCH_UNKNOWN;
	}
	return w->family->watch_end(w, why, why_size);
}
