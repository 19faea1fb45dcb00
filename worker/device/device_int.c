/* What the device families share: see device_int.h. */
#include "device_int.h"

#include <stdio.h>

#include "kb_log.h"

int kb__device_unread(const struct kb_device_cfg *c,
		      const struct kb_device_info *info, const char *what)
{
	if (c->required) {
		kb_error("gpu=%s: cannot read the %s device: %s "
			 "(KB_GPU_REQUIRE=0 starts anyway)",
			 c->gpu, what, info->why);
		return -1;
	}
	kb_warn("gpu=%s: cannot read the %s device: %s", c->gpu, what,
		info->why);
	return 0;
}

const char *kb__device_pick_arch(const struct kb_device_cfg *c,
				 struct kb_device *d, const char *own,
				 const char *named)
{
	const char *arch, *from;

	if (c->arch && c->arch[0]) {
		arch = c->arch;
		from = d->family->arch_setting;
	} else if (own && own[0]) {
		arch = own;
		from = "the device's";
	} else if (named) {
		arch = named;
		from = "from the KB_GPU name";
	} else {
		return NULL;
	}
	snprintf(d->arch, sizeof(d->arch), "%s", arch);
	return from;
}

void kb__device_name(const struct kb_device_info *d, const char *gpu, char *out,
		     size_t size)
{
	snprintf(out, size, "%s", d && d->ok ? d->name : gpu ? gpu : "");
}
