#include <mpi.h>
#include <stdio.h>
int main(int argc,char**argv){MPI_Init(&argc,&argv);int r,n;MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&n);
double buf[1000]={0}, rb[4000]; int cnt[4]={10,20,30,40}, dsp[4]={0,10,30,60}; MPI_Request rq[2]; MPI_Status st[2];
int nx=(r+1)%n, pv=(r-1+n)%n;
MPI_Isend(buf,100,MPI_DOUBLE,nx,7,MPI_COMM_WORLD,&rq[0]); MPI_Irecv(rb,100,MPI_DOUBLE,pv,7,MPI_COMM_WORLD,&rq[1]); MPI_Waitall(2,rq,st);
MPI_Send(buf,10,MPI_INT,nx,3,MPI_COMM_WORLD); MPI_Recv(rb,10,MPI_INT,MPI_ANY_SOURCE,3,MPI_COMM_WORLD,st);
MPI_Isend(buf,5,MPI_DOUBLE,nx,4,MPI_COMM_WORLD,&rq[0]); MPI_Irecv(rb,5,MPI_DOUBLE,pv,4,MPI_COMM_WORLD,&rq[1]); int f=0; MPI_Test(&rq[1],&f,st); MPI_Wait(&rq[1],st); MPI_Wait(&rq[0],st);
MPI_Sendrecv(buf,8,MPI_DOUBLE,nx,5,rb,8,MPI_DOUBLE,pv,5,MPI_COMM_WORLD,st);
MPI_Barrier(MPI_COMM_WORLD); MPI_Bcast(buf,50,MPI_DOUBLE,1,MPI_COMM_WORLD);
MPI_Reduce(buf,rb,20,MPI_DOUBLE,MPI_SUM,0,MPI_COMM_WORLD); MPI_Allreduce(buf,rb,30,MPI_DOUBLE,MPI_SUM,MPI_COMM_WORLD);
MPI_Alltoall(buf,10,MPI_DOUBLE,rb,10,MPI_DOUBLE,MPI_COMM_WORLD);
int sc[4]={cnt[r],cnt[r],cnt[r],cnt[r]}, sd[4]={0,0,0,0}; MPI_Alltoallv(buf,sc,sd,MPI_DOUBLE,rb,cnt,dsp,MPI_DOUBLE,MPI_COMM_WORLD);
MPI_Gather(buf,10,MPI_DOUBLE,rb,10,MPI_DOUBLE,0,MPI_COMM_WORLD);
MPI_Gatherv(buf,cnt[r],MPI_DOUBLE,rb,cnt,dsp,MPI_DOUBLE,2,MPI_COMM_WORLD);
MPI_Allgather(buf,10,MPI_DOUBLE,rb,10,MPI_DOUBLE,MPI_COMM_WORLD);
MPI_Allgatherv(buf,cnt[r],MPI_DOUBLE,rb,cnt,dsp,MPI_DOUBLE,MPI_COMM_WORLD);
MPI_Scatter(buf,10,MPI_DOUBLE,rb,10,MPI_DOUBLE,0,MPI_COMM_WORLD);
MPI_Scatterv(buf,cnt,dsp,MPI_DOUBLE,rb,cnt[r],MPI_DOUBLE,1,MPI_COMM_WORLD);
MPI_Reduce_scatter(buf,rb,cnt,MPI_DOUBLE,MPI_SUM,MPI_COMM_WORLD);
MPI_Scan(buf,rb,10,MPI_DOUBLE,MPI_SUM,MPI_COMM_WORLD); MPI_Exscan(buf,rb,10,MPI_DOUBLE,MPI_SUM,MPI_COMM_WORLD);
MPI_Comm c2; MPI_Comm_split(MPI_COMM_WORLD,r%2,r,&c2); MPI_Comm c3; MPI_Comm_dup(MPI_COMM_WORLD,&c3);
MPI_Allreduce(buf,rb,30,MPI_DOUBLE,MPI_SUM,c2);
MPI_Bcast(buf,50,MPI_DOUBLE,0,c2);
if(r%2==0){MPI_Ssend(buf,3,MPI_INT,nx,9,MPI_COMM_WORLD); MPI_Recv(rb,3,MPI_INT,pv,9,MPI_COMM_WORLD,st);}else{MPI_Recv(rb,3,MPI_INT,pv,9,MPI_COMM_WORLD,st); MPI_Ssend(buf,3,MPI_INT,nx,9,MPI_COMM_WORLD);}
volatile double x=0; for(int i=0;i<1000000;i++) x+=i;
MPI_Finalize();}
