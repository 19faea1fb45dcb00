/* sentinel_shim.c: the CUDA driver's sentinel arithmetic (kbg_model.c,
 * whose symbols are hidden) exported for sentinel_model.py, which checks
 * that the Python harness's copy (kbh_sentinel.py) agrees with it. */
#include "cuda/kbg_model.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT double shim_sample(const struct kbg_tcal *cal, const struct kbg_tcall *c,
			  int *path);
EXPORT double shim_score(double m, double claim, int forged);
EXPORT double shim_release_ns(const struct kbg_tcal *cal);
EXPORT double shim_late_work(const struct kbg_tcal *cal,
			     const struct kbg_tcall *c);
EXPORT int shim_calibrate(const struct kbg_tcall *dev, size_t n_dev,
			  const struct kbg_tcall *host, size_t n_host,
			  double slice_ns, double spin_ns,
			  struct kbg_tcal *out);

double shim_sample(const struct kbg_tcal *cal, const struct kbg_tcall *c,
		   int *path)
{
	enum kbg_tpath p;
	double s = kbg_time_sample(cal, c, &p);
	*path = (int)p;
	return s;
}

double shim_score(double m, double claim, int forged)
{
	return kbg_time_score(m, claim, forged);
}

double shim_release_ns(const struct kbg_tcal *cal)
{
	return kbg_time_release_ns(cal);
}

double shim_late_work(const struct kbg_tcal *cal, const struct kbg_tcall *c)
{
	return kbg_time_late_work(cal, c);
}

int shim_calibrate(const struct kbg_tcall *dev, size_t n_dev,
		   const struct kbg_tcall *host, size_t n_host, double slice_ns,
		   double spin_ns, struct kbg_tcal *out)
{
	return kbg_time_calibrate(dev, n_dev, host, n_host, slice_ns, spin_ns,
				  out);
}
