/*
 * mpibench: the reference side of `commtune bench ... --vs mpi`.
 *
 * It measures exactly what commtune's own benchmarks measure, with the
 * same iteration counts, warm-ups and statistics (internal/bench):
 *
 *   mpibench pingpong SIZES ITERS
 *     ranks 0 and 1; per size Iterations(size, ITERS) round trips after
 *     max(n/10, 2) unrecorded ones; one line per size with the median half
 *     round trip.
 *   mpibench coll OP SIZES ITERS
 *     every rank; per size two warm-up calls, then Iterations(size*(n-1),
 *     ITERS) iterations of a barrier followed by the timed call; the
 *     slowest rank's time of each iteration (MPI_MAX), then the median.
 *     Reductions sum doubles (sizes rounded down to whole doubles, at
 *     least one); the other operations move bytes; barrier is size 0.
 *
 * Output: one JSON object per line on rank 0's stdout.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { maxSizes = 64, budget = 256 << 20 };

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

/* median sorts v: the middle value, or the mean of the middle two. */
static double median(double *v, int n) {
	qsort(v, n, sizeof *v, cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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

static void roundTrips(char *b, long size, int n, int me, double *rtt) {
	int peer = 1 - me;
	for (int i = 0; i < n; i++) {
		double t0 = MPI_Wtime();
		if (me == 0) {
			MPI_Send(b, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(b, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(b, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(b, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
		}
		if (rtt)
			rtt[i] = MPI_Wtime() - t0;
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
			roundTrips(b, sizes[s], n / 10 > 2 ? n / 10 : 2, me, NULL);
			roundTrips(b, sizes[s], n, me, rtt);
		}
		if (me == 0) {
			double lat = median(rtt, n) / 2 * 1e6;
			printf("{\"bytes\":%ld,\"latency_us\":%.4f,\"bandwidth_MBps\":%.2f}\n", sizes[s], lat,
			       lat > 0 ? sizes[s] / lat : 0);
			fflush(stdout);
		}
		free(rtt);
	}
	free(b);
}

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
	fprintf(stderr, "mpibench: no reference for operation %s\n", op);
	MPI_Abort(MPI_COMM_WORLD, 2);
	return 1;
}

static void collective(const char *op, long *sizes, int ns, int iters, int me, int n) {
	int reduction = !strcmp(op, "reduce") || !strcmp(op, "allreduce");
	for (int s = 0; s < ns; s++) {
		long size = sizes[s];
		if (reduction)
			size = size / 8 * 8 < 8 ? 8 : size / 8 * 8;
		if (!strcmp(op, "barrier"))
			size = 0;
		/* room for every layout: n blocks on both sides */
		size_t room = (size_t)(size ? size : 1) * n;
		char *send = malloc(room), *recv = malloc(room);
		if (reduction)
			for (long i = 0; i < size / 8; i++)
				((double *)send)[i] = (double)i;
		else
			memset(send, 1, room);
		int its = iterations(size * (n > 1 ? n - 1 : 1), iters);
		double *t = timesBuf(its), *slowest = timesBuf(its);
		for (int w = 0; w < 2; w++)
			call(op, size, n, send, recv);
		for (int i = 0; i < its; i++) {
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = MPI_Wtime();
			call(op, size, n, send, recv);
			t[i] = (MPI_Wtime() - t0) * 1e9;
		}
		MPI_Reduce(t, slowest, its, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (me == 0) {
			printf("{\"algo\":\"mpi\",\"bytes\":%ld,\"time_us\":%.4f}\n", size, median(slowest, its) / 1e3);
			fflush(stdout);
		}
		free(t);
		free(slowest);
		free(send);
		free(recv);
	}
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
	} else if (argc == 5 && !strcmp(argv[1], "coll")) {
		collective(argv[2], sizes, parseSizes(argv[3], sizes), atoi(argv[4]), me, n);
	} else {
		if (me == 0)
			fprintf(stderr, "usage: mpibench pingpong SIZES ITERS | mpibench coll OP SIZES ITERS\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Finalize();
	return 0;
}
