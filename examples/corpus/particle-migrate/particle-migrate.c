/* Particle migration (PIC and molecular-dynamics codes): each step every rank tells every other how many
 * particles it sends (MPI_Alltoall of one int), moves them (MPI_Alltoallv of 6 doubles per particle),
 * computes the offset of its particles in a global numbering (MPI_Exscan) and pushes them; weak scaling.
 *
 *   particle-migrate NW     (NW >= 2)
 *
 * A rank sends 4*NW particles to each ring neighbour, and NW to another rank d when
 * splitmix64(step, rank, d) % 8 == 0 (a far flight); 8 steps; 40 flop per particle held (100*NW plus what
 * arrived, minus what left); every 4th step an MPI_Allreduce of the energy (1 double). */
#include "../corpus.h"

static int sent_to(int step, int rank, int d, int np, int nw)
{
  if (d == rank)
    return 0;
  if (d == (rank + 1) % np || d == (rank + np - 1) % np)
    return 4 * nw;
  return corpus_mix(((unsigned long long)step * np + rank) * np + d) % 8 == 0 ? nw : 0;
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int np, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int nw = corpus_nw(argc, argv, "particle-migrate", 8, 2, 1);
  corpus_need_np(np, 3, "particle-migrate");
  int* scount = malloc(sizeof(int) * np);
  int* rcount = malloc(sizeof(int) * np);
  int* sdispl = malloc(sizeof(int) * np);
  int* rdispl = malloc(sizeof(int) * np);
  int* nsend = malloc(sizeof(int) * np);
  int* nrecv = malloc(sizeof(int) * np);
  long held = 100L * nw;
  double energy = 1.0, total = 0.0;
  for (int step = 0; step < 8; step++) {
    for (int d = 0; d < np; d++)
      nsend[d] = sent_to(step, rank, d, np, nw);
    MPI_Alltoall(nsend, 1, MPI_INT, nrecv, 1, MPI_INT, MPI_COMM_WORLD);
    int out = 0, in = 0;
    for (int d = 0; d < np; d++) {
      scount[d] = 6 * nsend[d];
      rcount[d] = 6 * nrecv[d];
      sdispl[d] = out;
      rdispl[d] = in;
      out += scount[d];
      in += rcount[d];
    }
    double* sbuf = calloc((size_t)out + 1, sizeof(double));
    double* rbuf = calloc((size_t)in + 1, sizeof(double));
    MPI_Alltoallv(sbuf, scount, sdispl, MPI_DOUBLE, rbuf, rcount, rdispl, MPI_DOUBLE, MPI_COMM_WORLD);
    free(sbuf);
    free(rbuf);
    held += in / 6 - out / 6;
    long offset = 0;
    MPI_Exscan(&held, &offset, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    DECLARE_FLOPS(40.0 * (double)held);
    if (step % 4 == 3)
      MPI_Allreduce(&energy, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  if (rank == 0)
    printf("particle-migrate: np %d, %d particles per rank at the start, energy %g\n", np, 100 * nw, total);
  free(scount);
  free(rcount);
  free(sdispl);
  free(rdispl);
  free(nsend);
  free(nrecv);
  MPI_Finalize();
  return 0;
}
