#include <mpi.h>
int main(int argc,char**argv){MPI_Init(&argc,&argv);int r,n;MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&n);
static double buf[100000]; MPI_Comm c; MPI_Comm_split(MPI_COMM_WORLD,r%2,-r,&c); int cr,cn; MPI_Comm_rank(c,&cr); MPI_Comm_size(c,&cn);
int nx=(cr+1)%cn, pv=(cr-1+cn)%cn; MPI_Request rq[2];
for(int it=0;it<5;it++){
MPI_Isend(buf,1000*(it+1),MPI_DOUBLE,nx,7,c,&rq[0]); MPI_Irecv(buf+50000,1000*(it+1),MPI_DOUBLE,pv,7,c,&rq[1]); MPI_Waitall(2,rq,MPI_STATUSES_IGNORE);
if(cr==0){MPI_Send(buf,20000,MPI_DOUBLE,1,3,c);} else if(cr==1){MPI_Recv(buf,20000,MPI_DOUBLE,0,3,c,MPI_STATUS_IGNORE);}

}
MPI_Finalize();}
