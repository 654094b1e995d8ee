/*
 * mpibench: the reference side of `commtune bench ... --vs mpi`.
 *
 * It measures exactly what commtune's own benchmarks measure, with the
 * same iteration counts, warm-ups, timing and statistics (internal/bench):
 *
 *   mpibench pingpong SIZES ITERS
 *     ranks 0 and 1; 500 unrecorded round trips of 8 bytes, then per size
 *     20 unrecorded round trips, a barrier of the two (an empty message
 *     each way), and Iterations(size, ITERS) round trips back to back,
 *     each timed on rank 0 from the end of the one before to its own;
 *     one line per size summarizing half of each round trip.
 *   mpibench coll OP SIZES ITERS [back-to-back|barrier]
 *     every rank, N = Iterations(size*(n-1), ITERS) timed calls per size.
 *     back-to-back (the default): untimed calls 20 at a time until rank 0
 *     has spent 10 ms in them, one MPI_Barrier, then
 *     the N calls one after another, each timed from the end of the one
 *     before to its own. barrier: two untimed calls, then per timed call
 *     an MPI_Barrier and the call, timed from leaving the barrier. Each
 *     call's time is then the slowest rank's (MPI_MAX to rank 0 after
 *     the calls); one line per size summarizing those times. Reductions
 *     (reduce, allreduce, reducescatterblock, reducescatter, scan,
 *     exscan) sum doubles, the size being the whole vector, rounded down
 *     to whole doubles, at least one (reducescatterblock: to as many for
 *     every rank, at least one; reducescatter's blocks are as even as
 *     they go, the first ones one longer); the other operations move
 *     bytes; barrier is size 0.
 *   mpibench rma PATTERN SIZES ITERS alloc|new
 *     the one-sided patterns of internal/bench (rma.go), after the OSU
 *     micro-benchmarks': rank 0 the origin, rank 1 the target waiting in
 *     MPI_Barrier; a window of the largest size (MPI_Win_allocate for
 *     alloc, MPI_Win_create over malloc'd memory for new; fop patterns an
 *     int64). Per size: the pattern's epoch opened (put-lat, get-lat,
 *     put-bw, get-bw: MPI_Win_lock shared on rank 1; fop-lockall:
 *     MPI_Win_lock_all; fop-lock: none), untimed iterations for 10 ms, then
 *     Iterations(size*ops, ITERS) iterations back to back, each timed from
 *     the end of the one before: put-lat/get-lat one MPI_Put/MPI_Get of
 *     size bytes at displacement 0 and MPI_Win_flush; put-bw/get-bw 64 of
 *     them and one flush; fop-lockall MPI_Fetch_and_op (MPI_SUM of an
 *     int64) and a flush; fop-lock MPI_Win_lock exclusive, the same
 *     MPI_Fetch_and_op, MPI_Win_unlock. One coll line per size, "algo"
 *     the pattern.
 *   mpibench summary VALUES
 *     the summary of VALUES (nanoseconds, comma-separated) in coll's
 *     fields: a check that the statistics are internal/bench's.
 *   mpibench startup
 *     the job `commtune bench startup` launches, as bench.Startup: one
 *     MPI_Allreduce (sum) of the rank numbers, checked against n(n-1)/2,
 *     then one (max) of the moments each rank had it done, read with
 *     clock_gettime(CLOCK_REALTIME) as Go's time.Now; rank 0 prints
 *     {"ranks","first_collective_ns"}, the latest of them less the launch's
 *     start, which COMMTUNE_BENCH_START_NS gives in Unix nanoseconds
 *     (bench.EnvStartupStart). With COMMTUNE_BENCH_ALLTOALL=B
 *     (bench.EnvStartupAlltoall), 10 MPI_Alltoall of B bytes per peer
 *     follow, each checked as bench.Startup does.
 *
 * A summary is the mean, the 50th, 90th and 99th percentiles (linear
 * interpolation between the closest ranks, as internal/stats) and the
 * maximum, in microseconds, and the number of calls:
 *   pingpong: {"bytes","latency_us" (p50),"bandwidth_MBps" (bytes/p50),
 *              "latency_mean_us","latency_p90_us","latency_p99_us",
 *              "latency_max_us","round_trips"}
 *   coll:     {"algo":"mpi","bytes","time_us" (p50),"mean_us","p90_us",
 *              "p99_us","max_us","calls"}
 * Times are read with MPI_Wtime but for startup's. Output: one JSON object
 * per line on rank 0's stdout.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { maxSizes = 64, budget = 256 << 20, warmupCalls = 20, collBlocks = 5 };
static const double warmupSeconds = 0.010; /* internal/bench WarmupTime */

static int iterations(long size, int iters) {
	long n = iters;
	if (size > 0 && budget / size < n)
		n = budget / size;
	return n < 20 ? 20 : (int)n;
}

static int cmpd(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* quantile is the q-quantile of v, sorted and not empty: linear
 * interpolation between the two closest ranks, as internal/stats. */
static double quantile(const double *v, int n, double q) {
	if (!(q > 0))
		return v[0];
	double pos = (q < 1 ? q : 1) * (n - 1);
	int i = (int)pos;
	double f = pos - i, lo = v[i];
	if (f == 0)
		return lo;
	double hi = v[i + 1];
	if (lo == hi)
		return lo;
	return (1 - f) * lo + f * hi;
}

typedef struct {
	int calls;
	double mean, p50, p90, p99, max; /* microseconds */
} summary;

/* summarize sorts ns, n call times in nanoseconds, and summarizes them. */
static summary summarize(double *ns, int n) {
	summary s = {n, 0, 0, 0, 0, 0};
	if (n == 0)
		return s;
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += ns[i];
	qsort(ns, n, sizeof *ns, cmpd);
	s.mean = sum / n / 1e3;
	s.p50 = quantile(ns, n, 0.5) / 1e3;
	s.p90 = quantile(ns, n, 0.9) / 1e3;
	s.p99 = quantile(ns, n, 0.99) / 1e3;
	s.max = ns[n - 1] / 1e3;
	return s;
}

static void printColl(long size, summary s) {
	printf("{\"algo\":\"mpi\",\"bytes\":%ld,\"time_us\":%.4f,\"mean_us\":%.4f,\"p90_us\":%.4f,"
	       "\"p99_us\":%.4f,\"max_us\":%.4f,\"calls\":%d}\n",
	       size, s.p50, s.mean, s.p90, s.p99, s.max, s.calls);
	fflush(stdout);
}

static int parseSizes(const char *s, long *out) {
	int n = 0;
	char *end;
	while (*s && n < maxSizes) {
		long v = strtol(s, &end, 10);
		if (end == s || v < 0) {
			fprintf(stderr, "mpibench: bad size list at %s\n", s);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		out[n++] = v;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

static double *timesBuf(int n) {
	double *t = malloc(sizeof(double) * n);
	if (!t) {
		fprintf(stderr, "mpibench: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return t;
}

/* roundTrips does n round trips of size bytes between ranks 0 and 1; with
 * rtt, it stores each one's time in nanoseconds, from the end of the one
 * before to its own. */
static void roundTrips(char *b, long size, int n, int me, double *rtt) {
	int peer = 1 - me;
	double prev = MPI_Wtime();
	for (int i = 0; i < n; i++) {
		if (me == 0) {
			MPI_Send(b, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(b, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(b, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(b, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
		}
		double now = MPI_Wtime();
		if (rtt)
			rtt[i] = (now - prev) * 1e9;
		prev = now;
	}
}

/* pairBarrier is the barrier of ranks 0 and 1: an empty message each way,
 * as internal/bench's. */
static void pairBarrier(int me) {
	int peer = 1 - me;
	if (me == 0) {
		MPI_Send(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
		MPI_Recv(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
	}
}

static void pingpong(long *sizes, int ns, int iters, int me) {
	long maxSize = 8;
	for (int i = 0; i < ns; i++)
		if (sizes[i] > maxSize)
			maxSize = sizes[i];
	char *b = malloc(maxSize);
	for (long i = 0; i < maxSize; i++)
		b[i] = (char)i;
	if (me <= 1)
		roundTrips(b, 8, 500, me, NULL);
	for (int s = 0; s < ns; s++) {
		int n = iterations(sizes[s], iters);
		double *rtt = timesBuf(n);
		if (me <= 1) {
			roundTrips(b, sizes[s], warmupCalls, me, NULL);
			pairBarrier(me);
			roundTrips(b, sizes[s], n, me, rtt);
		}
		if (me == 0) {
			for (int i = 0; i < n; i++)
				rtt[i] /= 2; /* half a round trip */
			summary x = summarize(rtt, n);
			printf("{\"bytes\":%ld,\"latency_us\":%.4f,\"bandwidth_MBps\":%.2f,\"latency_mean_us\":%.4f,"
			       "\"latency_p90_us\":%.4f,\"latency_p99_us\":%.4f,\"latency_max_us\":%.4f,\"round_trips\":%d}\n",
			       sizes[s], x.p50, x.p50 > 0 ? sizes[s] / x.p50 : 0, x.mean, x.p90, x.p99, x.max, x.calls);
			fflush(stdout);
		}
		free(rtt);
	}
	free(b);
}

/* rsCounts are MPI_Reduce_scatter's blocks, in doubles, for the size
 * being measured: as even as they go, the first ones one longer
 * (collcall.EvenCounts). */
static int *rsCounts;

static int call(const char *op, long size, int n, void *send, void *recv) {
	int cnt = (int)size;
	if (!strcmp(op, "barrier"))
		return MPI_Barrier(MPI_COMM_WORLD);
	if (!strcmp(op, "bcast"))
		return MPI_Bcast(send, cnt, MPI_BYTE, 0, MPI_COMM_WORLD);
	if (!strcmp(op, "reduce"))
		return MPI_Reduce(send, recv, cnt / 8, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!strcmp(op, "allreduce"))
		return MPI_Allreduce(send, recv, cnt / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (!strcmp(op, "allgather"))
		return MPI_Allgather(send, cnt, MPI_BYTE, recv, cnt, MPI_BYTE, MPI_COMM_WORLD);
	if (!strcmp(op, "alltoall"))
		return MPI_Alltoall(send, cnt, MPI_BYTE, recv, cnt, MPI_BYTE, MPI_COMM_WORLD);
	if (!strcmp(op, "gather"))
		return MPI_Gather(send, cnt, MPI_BYTE, recv, cnt, MPI_BYTE, 0, MPI_COMM_WORLD);
	if (!strcmp(op, "scatter"))
		return MPI_Scatter(send, cnt, MPI_BYTE, recv, cnt, MPI_BYTE, 0, MPI_COMM_WORLD);
	if (!strcmp(op, "reducescatterblock"))
		return MPI_Reduce_scatter_block(send, recv, cnt / 8 / n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (!strcmp(op, "reducescatter"))
		return MPI_Reduce_scatter(send, recv, rsCounts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (!strcmp(op, "scan"))
		return MPI_Scan(send, recv, cnt / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (!strcmp(op, "exscan"))
		return MPI_Exscan(send, recv, cnt / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	fprintf(stderr, "mpibench: no reference for operation %s\n", op);
	MPI_Abort(MPI_COMM_WORLD, 2);
	return 1;
}

/* warmUp makes untimed calls, warmupCalls at a time, until rank 0 has
 * spent warmupSeconds in them, as internal/bench (WarmupTime). */
static void warmUp(const char *op, long size, int n, void *send, void *recv, int me) {
	double start = MPI_Wtime();
	char more = 1;
	while (more) {
		for (int w = 0; w < warmupCalls; w++)
			call(op, size, n, send, recv);
		if (me == 0 && MPI_Wtime() - start >= warmupSeconds)
			more = 0;
		MPI_Bcast(&more, 1, MPI_CHAR, 0, MPI_COMM_WORLD);
	}
}

static void collective(const char *op, long *sizes, int ns, int iters, int me, int n, int backToBack) {
	int reduction = !strcmp(op, "reduce") || !strcmp(op, "allreduce") || !strcmp(op, "reducescatter") ||
	                !strcmp(op, "reducescatterblock") || !strcmp(op, "scan") || !strcmp(op, "exscan");
	rsCounts = malloc(sizeof(int) * n);
	for (int s = 0; s < ns; s++) {
		long size = sizes[s];
		if (reduction)
			size = size / 8 * 8 < 8 ? 8 : size / 8 * 8;
		if (!strcmp(op, "reducescatterblock")) /* whole doubles for every rank */
			size = (size / 8 / n < 1 ? 1 : size / 8 / n) * 8 * n;
		if (!strcmp(op, "barrier"))
			size = 0;
		for (int r = 0; r < n; r++)
			rsCounts[r] = (int)(size / 8 / n + (r < size / 8 % n));
		/* room for every layout: n blocks on both sides */
		size_t room = (size_t)(size ? size : 1) * n;
		char *send = malloc(room), *recv = malloc(room);
		if (reduction)
			for (long i = 0; i < size / 8; i++)
				((double *)send)[i] = (double)i;
		else
			memset(send, 1, room);
		int its = iterations(size * (n > 1 ? n - 1 : 1), iters);
		if (!backToBack) /* as internal/bench: whole blocks of its/5 calls */
			its = (its / collBlocks > 1 ? its / collBlocks : 1) * collBlocks;
		double *t = timesBuf(its), *slowest = timesBuf(its);
		if (backToBack) {
			warmUp(op, size, n, send, recv, me);
			MPI_Barrier(MPI_COMM_WORLD);
			double prev = MPI_Wtime();
			for (int i = 0; i < its; i++) {
				call(op, size, n, send, recv);
				double now = MPI_Wtime();
				t[i] = (now - prev) * 1e9;
				prev = now;
			}
		} else {
			for (int w = 0; w < 2; w++)
				call(op, size, n, send, recv);
			/* one algorithm: the blocks run on end to end */
			for (int i = 0; i < its; i++) {
				MPI_Barrier(MPI_COMM_WORLD);
				double t0 = MPI_Wtime();
				call(op, size, n, send, recv);
				t[i] = (MPI_Wtime() - t0) * 1e9;
			}
		}
		MPI_Reduce(t, slowest, its, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (me == 0)
			printColl(size, summarize(slowest, its));
		free(t);
		free(slowest);
		free(send);
		free(recv);
	}
	free(rsCounts);
}

/* denseTraffic is bench.denseTraffic: 10 Alltoalls of the bytes per
 * peer COMMTUNE_BENCH_ALLTOALL gives (unset or 0: none), each checked:
 * element k of the block rank r sends rank q is r*n + q + k + call. */
static void denseTraffic(int me, int n) {
	const char *env = getenv("COMMTUNE_BENCH_ALLTOALL");
	char *end;
	long bytes = env && *env ? strtol(env, &end, 10) : 0;
	if (env && *env && (*end || bytes < 0 || bytes % 8)) {
		if (me == 0)
			fprintf(stderr, "mpibench: COMMTUNE_BENCH_ALLTOALL=%s: want bytes per peer, a multiple of 8\n", env);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	long per = bytes / 8;
	if (per == 0)
		return;
	long long *send = malloc(n * per * sizeof *send), *recv = malloc(n * per * sizeof *recv);
	if (!send || !recv) {
		fprintf(stderr, "mpibench: rank %d: no memory for %ld bytes per peer\n", me, bytes);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int call = 0; call < 10; call++) {
		for (int q = 0; q < n; q++)
			for (long k = 0; k < per; k++)
				send[q * per + k] = (long long)me * n + q + k + call;
		MPI_Alltoall(send, (int)per, MPI_LONG_LONG, recv, (int)per, MPI_LONG_LONG, MPI_COMM_WORLD);
		for (int r = 0; r < n; r++)
			for (long k = 0; k < per; k++)
				if (recv[r * per + k] != (long long)r * n + me + k + call) {
					fprintf(stderr, "mpibench: rank %d: alltoall %d: element %ld from rank %d is %lld\n", me, call, k, r,
					        recv[r * per + k]);
					MPI_Abort(MPI_COMM_WORLD, 1);
				}
	}
	free(send);
	free(recv);
}

/* startup is the least a job does: one collective, checked. The second
 * one only tells rank 0 when the last rank was done with the first. */
static void startup(int me, int n) {
	const char *env = getenv("COMMTUNE_BENCH_START_NS");
	char *end;
	long long start = env ? strtoll(env, &end, 10) : 0;
	if (!env || end == env || *end || start <= 0) {
		if (me == 0)
			fprintf(stderr, "mpibench: COMMTUNE_BENCH_START_NS=%s: want the launch's start in Unix nanoseconds\n", env ? env : "");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	long long mine = me, sum = 0, done, latest = 0;
	MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	done = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	if (sum != (long long)n * (n - 1) / 2) {
		fprintf(stderr, "mpibench: rank %d: allreduce of the rank numbers of %d ranks gave %lld, want %lld\n", me, n, sum,
		        (long long)n * (n - 1) / 2);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Allreduce(&done, &latest, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
	denseTraffic(me, n);
	if (me == 0) {
		printf("{\"ranks\":%d,\"first_collective_ns\":%lld}\n", n, latest - start);
		fflush(stdout);
	}
}

enum { rmaBurst = 64 }; /* internal/bench RMABurst */

static void rmaIteration(const char *pattern, char *buf, long size, MPI_Win win) {
	long long one = 1, old;
	if (!strcmp(pattern, "fop-lock")) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
		MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, 1, 0, MPI_SUM, win);
		MPI_Win_unlock(1, win);
		return;
	}
	if (!strcmp(pattern, "fop-lockall")) {
		MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, 1, 0, MPI_SUM, win);
		MPI_Win_flush(1, win);
		return;
	}
	int ops = strstr(pattern, "-bw") ? rmaBurst : 1;
	for (int k = 0; k < ops; k++) {
		if (pattern[0] == 'p')
			MPI_Put(buf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win);
		else
			MPI_Get(buf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win);
	}
	MPI_Win_flush(1, win);
}

static void rma(const char *pattern, long *sizes, int ns, int iters, int me, int alloc) {
	int fop = !strncmp(pattern, "fop-", 4);
	if (!fop && strcmp(pattern, "put-lat") && strcmp(pattern, "get-lat") && strcmp(pattern, "put-bw") &&
	    strcmp(pattern, "get-bw")) {
		if (me == 0)
			fprintf(stderr, "mpibench: rma pattern %s unknown\n", pattern);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	long maxSize = 8;
	for (int i = 0; i < ns; i++)
		if (sizes[i] > maxSize)
			maxSize = sizes[i];
	long winSize = fop ? 8 : maxSize;
	char *base = NULL;
	MPI_Win win;
	if (alloc)
		MPI_Win_allocate(winSize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	else {
		base = calloc(winSize, 1);
		MPI_Win_create(base, winSize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	}
	char *buf = malloc(maxSize);
	for (long i = 0; i < maxSize; i++)
		buf[i] = (char)i;
	int ops = strstr(pattern, "-bw") ? rmaBurst : 1;
	for (int s = 0; s < ns; s++) {
		int n = iterations(sizes[s] * ops, iters);
		double *t = timesBuf(n);
		if (me == 0) {
			if (!strcmp(pattern, "fop-lockall"))
				MPI_Win_lock_all(0, win);
			else if (!fop)
				MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
			double start = MPI_Wtime();
			while (MPI_Wtime() - start < warmupSeconds)
				rmaIteration(pattern, buf, sizes[s], win);
			double prev = MPI_Wtime();
			for (int i = 0; i < n; i++) {
				rmaIteration(pattern, buf, sizes[s], win);
				double now = MPI_Wtime();
				t[i] = (now - prev) * 1e9;
				prev = now;
			}
			if (!strcmp(pattern, "fop-lockall"))
				MPI_Win_unlock_all(win);
			else if (!fop)
				MPI_Win_unlock(1, win);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		if (me == 0) {
			summary x = summarize(t, n);
			printf("{\"algo\":\"%s\",\"bytes\":%ld,\"time_us\":%.4f,\"mean_us\":%.4f,\"p90_us\":%.4f,"
			       "\"p99_us\":%.4f,\"max_us\":%.4f,\"calls\":%d}\n",
			       pattern, sizes[s], x.p50, x.mean, x.p90, x.p99, x.max, x.calls);
			fflush(stdout);
		}
		free(t);
	}
	MPI_Win_free(&win);
	if (!alloc)
		free(base);
	free(buf);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int me, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	long sizes[maxSizes];
	if (argc == 4 && !strcmp(argv[1], "pingpong")) {
		if (n < 2) {
			fprintf(stderr, "mpibench: ping-pong needs 2 ranks, have %d\n", n);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		pingpong(sizes, parseSizes(argv[2], sizes), atoi(argv[3]), me);
	} else if ((argc == 5 || argc == 6) && !strcmp(argv[1], "coll")) {
		int backToBack = argc == 5 || !strcmp(argv[5], "back-to-back");
		if (!backToBack && strcmp(argv[5], "barrier")) {
			if (me == 0)
				fprintf(stderr, "mpibench: timing %s: want back-to-back or barrier\n", argv[5]);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		collective(argv[2], sizes, parseSizes(argv[3], sizes), atoi(argv[4]), me, n, backToBack);
	} else if (argc == 6 && !strcmp(argv[1], "rma")) {
		if (n < 2 || (strcmp(argv[5], "alloc") && strcmp(argv[5], "new"))) {
			if (me == 0)
				fprintf(stderr, "mpibench: rma needs 2 ranks and a window of alloc or new\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		rma(argv[2], sizes, parseSizes(argv[3], sizes), atoi(argv[4]), me, !strcmp(argv[5], "alloc"));
	} else if (argc == 2 && !strcmp(argv[1], "startup")) {
		startup(me, n);
	} else if (argc == 3 && !strcmp(argv[1], "summary")) {
		int k = parseSizes(argv[2], sizes);
		double v[maxSizes];
		for (int i = 0; i < k; i++)
			v[i] = (double)sizes[i];
		if (me == 0)
			printColl(0, summarize(v, k));
	} else {
		if (me == 0)
			fprintf(stderr, "usage: mpibench pingpong SIZES ITERS | mpibench coll OP SIZES ITERS [back-to-back|barrier] | mpibench rma PATTERN SIZES ITERS alloc|new | mpibench summary VALUES | mpibench startup\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Finalize();
	return 0;
}
