/* Halo exchange of an irregular mesh partition (ParMETIS-partitioned unstructured codes): the parts'
 * adjacency is a deterministic generated graph, weak scaling in NW.
 *
 *   graph-partition NW
 *
 * Parts i and j are neighbours when |i - j| = 1 (a chain, so the graph is connected) or when
 * splitmix64(i * np + j) % 5 == 0 (i < j); their shared boundary is 1 + splitmix64(j * np + i) % 7
 * units of NW doubles. 6 steps: MPI_Irecv from and MPI_Isend to every neighbour (tag 7), MPI_Waitall,
 * 100 * NW^2 * (degree + 1) flop, and an MPI_Allreduce of 2 doubles. */
#include "../corpus.h"

static int adjacent(int i, int j, int np)
{
  if (i == j)
    return 0;
  int lo = i < j ? i : j, hi = i < j ? j : i;
  return hi - lo == 1 || corpus_mix((unsigned long long)lo * np + hi) % 5 == 0;
}

static int boundary(int i, int j, int np)
{
  int lo = i < j ? i : j, hi = i < j ? j : i;
  return 1 + (int)(corpus_mix((unsigned long long)hi * np + lo) % 7);
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "graph-partition", 8, 1, 1);
  int* nbr = malloc(np * sizeof(int));
  int deg = 0;
  for (int j = 0; j < np; j++)
    if (adjacent(rank, j, np))
      nbr[deg++] = j;
  double* sbuf = calloc((size_t)7 * nw, sizeof(double));
  double* rbuf = calloc((size_t)7 * nw * (deg ? deg : 1), sizeof(double));
  MPI_Request* req = malloc(2 * (deg ? deg : 1) * sizeof(MPI_Request));
  double local[2] = {1.0, (double)deg}, sum[2];
  for (int step = 0; step < 6; step++) {
    for (int k = 0; k < deg; k++)
      MPI_Irecv(rbuf + (size_t)7 * nw * k, boundary(rank, nbr[k], np) * nw, MPI_DOUBLE, nbr[k], 7,
                MPI_COMM_WORLD, &req[k]);
    for (int k = 0; k < deg; k++)
      MPI_Isend(sbuf, boundary(rank, nbr[k], np) * nw, MPI_DOUBLE, nbr[k], 7, MPI_COMM_WORLD, &req[deg + k]);
    MPI_Waitall(2 * deg, req, MPI_STATUSES_IGNORE);
    DECLARE_FLOPS(100.0 * nw * nw * (deg + 1));
    MPI_Allreduce(local, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  if (rank == 0)
    printf("graph-partition: np %d, nw %d, %g edge ends\n", np, nw, sum[1]);
  free(nbr); free(sbuf); free(rbuf); free(req);
  MPI_Finalize();
  return 0;
}
