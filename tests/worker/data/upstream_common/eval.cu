// An upstream-style CUDA harness: its own main() speaks the POPCORN
// protocol (report on POPCORN_FD, exit codes 0/2/111/112/113), as upstream
// KernelBot's eval.cu files do. It checks custom_kernel (out[i] = 2 in[i])
// on the host, so the worker's tests can run it where there is no GPU.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "task.h"

int main(int argc, char **argv)
{
	const char *fd = std::getenv("POPCORN_FD");
	FILE *rep = fd ? fdopen(std::atoi(fd), "w") : nullptr;

	if (!rep)
		return 111;
	if (argc != 3)
		return 2;
	const std::string mode = argv[1];
	const bool test = mode == "test";
	if (!test && mode != "benchmark" && mode != "leaderboard" &&
	    mode != "profile")
		return 2;
	FILE *cf = std::fopen(argv[2], "r");
	if (!cf)
		return 113;
	std::vector<std::string> specs;
	std::vector<long> sizes, seeds;
	char line[512];
	while (std::fgets(line, sizeof line, cf)) {
		long size, seed;
		line[std::strcspn(line, "\n")] = '\0';
		if (std::sscanf(line, "size: %ld; seed: %ld", &size, &seed) != 2 ||
		    size < 1 || size > (1L << 24))
			return 113;
		specs.push_back(line);
		sizes.push_back(size);
		seeds.push_back(seed);
	}
	std::fclose(cf);
	const char *kind = test ? "test" : "benchmark";
	std::fprintf(rep, "%s-count: %zu\n", kind, specs.size());
	bool ok = true;
	for (size_t i = 0; i < specs.size(); i++) {
		const int n = (int)sizes[i];
		std::vector<int> in(n), out(n, -1);
		std::srand((unsigned)seeds[i]);
		for (int j = 0; j < n; j++)
			in[j] = std::rand() % 1000;
		auto t0 = std::chrono::steady_clock::now();
		custom_kernel(in.data(), out.data(), n);
		auto t1 = std::chrono::steady_clock::now();
		bool good = true;
		for (int j = 0; j < n; j++)
			good = good && out[j] == 2 * in[j];
		std::fprintf(rep, "%s.%zu.spec: %s\n", kind, i, specs[i].c_str());
		if (!test && good) {
			double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
			if (ns < 1)
				ns = 1;
			std::fprintf(rep,
				     "benchmark.%zu.runs: 1\nbenchmark.%zu.mean: %.1f\n"
				     "benchmark.%zu.std: 0\nbenchmark.%zu.err: 0\n"
				     "benchmark.%zu.best: %.1f\nbenchmark.%zu.worst: %.1f\n",
				     i, i, ns, i, i, i, ns, i, ns);
		}
		std::fprintf(rep, "%s.%zu.status: %s\n", kind, i, good ? "pass" : "fail");
		if (!good) {
			std::fprintf(rep, "%s.%zu.error: wrong output\n", kind, i);
			ok = false;
		}
	}
	std::fprintf(rep, "check: %s\n", ok ? "pass" : "fail");
	std::fclose(rep);
	return ok ? 0 : 112;
}
