// MPI start-up: world, node-local ranks (MPI_Comm_split_type SHARED) and all host names.
#include "pix2pix/dist/mpi_session.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <thread>

#include "pix2pix/dist/mpi_check.hpp"

namespace pix2pix::dist {

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw Error(describe_failed_call("MPI", call, file, line, std::string(text, static_cast<size_t>(length))));
}

// Note [ring all-reduce]: our collectives are MPI_Iallreduce in place (See Note [polled collectives]).
// Open MPI's libnbc then always takes its binomial tree (nbc_iallreduce.c: "p < 4 || ... ||
// inplace" → binomial): every rank sends and receives the whole buffer log2(p) times up and down
// the tree, where a ring moves 2(p-1)/p of it. For the gradient buckets that is 2x the bytes at 2
// ranks (G's 218 MB: 166-208 ms against 81-84 ms with the ring, docs/performance.md) and
// log2(p)x at scale. So the ring is the default unless the user chose an algorithm; other MPI
// libraries ignore the variable. Small messages pay 2(p-1) latencies instead of 2 log2(p).
namespace {
void prefer_ring_allreduce() {
  ::setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
}
}  // namespace

// Note [waiting ranks that spin]: an Open MPI rank waits for a message by polling, and gives up
// its core between polls (mpi_yield_when_idle) only where Open MPI knows the node is
// oversubscribed: more ranks than the hostfile's slots or Slurm's CPUs, or mpirun
// --oversubscribe. A hostfile or slurm.conf that overstates a node's cores (containers, the CI
// lab's namespace hosts) hides it, and then each waiting rank takes a core from one with work: a
// 16-rank epoch over the lab's hosts ran 2.2-3.7x slower (See Note [the lab's ranks yield] in
// tests/cluster/cluster_lib.sh). cli::settle_threads warns where a node's ranks outnumber its
// cores and their MPI does not yield. The variable is read through the MPI tool interface, where
// Open MPI 4 and 5 show what they decided (set by the user, or because they knew); a library
// without it is not judged.
namespace {
std::optional<bool> read_yields_when_idle() {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return std::nullopt;
  std::optional<bool> yields;
  int index = 0;
  if (MPI_T_cvar_get_index("mpi_yield_when_idle", &index) == MPI_SUCCESS) {
    char name[256], description[1024];
    int name_length = sizeof name, description_length = sizeof description, verbosity = 0, bind = 0, scope = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum enumeration = MPI_T_ENUM_NULL;
    int size = 0, count = 0;
    MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
    unsigned char value[16] = {};
    if (MPI_T_cvar_get_info(index, name, &name_length, &verbosity, &type, &enumeration, description,
                            &description_length, &bind, &scope) == MPI_SUCCESS &&
        MPI_Type_size(type, &size) == MPI_SUCCESS && size >= 1 && size <= static_cast<int>(sizeof value) &&
        bind == MPI_T_BIND_NO_OBJECT && MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
      if (count == 1 && MPI_T_cvar_read(handle, value) == MPI_SUCCESS)
        yields = std::any_of(value, value + size, [](unsigned char byte) { return byte != 0; });
      MPI_T_cvar_handle_free(&handle);
    }
  }
  MPI_T_finalize();
  return yields;
}
}  // namespace

// Every local rank's affinity mask, to count those that overlap this rank's and the cores of the
// node's ranks together. A rank whose mask cannot be read counts as running on every core.
namespace {
struct NodeCores {
  CoreShare share;
  int node_cores = 1;
};
NodeCores share_cores(MPI_Comm local, int local_size) {
  NodeCores result;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0 || CPU_COUNT(&mine) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &mine);
  std::vector<cpu_set_t> masks(static_cast<size_t>(local_size));
  MPI_CHECK(MPI_Allgather(&mine, sizeof(cpu_set_t), MPI_BYTE, masks.data(), sizeof(cpu_set_t), MPI_BYTE, local));
  cpu_set_t all;
  CPU_ZERO(&all);
  result.share.mask_cores = usable_cores();
  result.share.ranks_sharing = 0;
  for (cpu_set_t& mask : masks) {
    cpu_set_t both;
    CPU_AND(&both, &mask, &mine);
    if (CPU_COUNT(&both) > 0) ++result.share.ranks_sharing;
    CPU_OR(&all, &all, &mask);
  }
  result.node_cores = std::min(CPU_COUNT(&all), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return result;
}
}  // namespace

int MpiSession::sum_over_node(int mine) const {
  MPI_Comm local = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  int sum = 0;
  const int status = MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, local);
  MPI_Comm_free(&local);
  MPI_CHECK(status);
  return sum;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  prefer_ring_allreduce();
  MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_));
  set_process_rank(world_ > 1 ? rank_ : -1);

  MPI_Comm local = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
  MPI_CHECK(MPI_Comm_size(local, &local_size_));
  const NodeCores cores = share_cores(local, local_size_);
  core_share_ = cores.share;
  node_cores_ = cores.node_cores;
  MPI_CHECK(MPI_Comm_free(&local));
  yields_when_idle_ = read_yields_when_idle();

  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_CHECK(MPI_Get_processor_name(name, &length));
  host_.assign(name, static_cast<size_t>(length));
  hosts_ = allgather(host_);
  node_count_ = static_cast<int>(std::set<std::string>(hosts_.begin(), hosts_.end()).size());
}

std::vector<std::string> MpiSession::allgather(const std::string& mine) const {
  if (mine.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw Error("MpiSession::allgather: a string of " + std::to_string(mine.size()) + " bytes is too long for MPI");
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(world_)), offsets(static_cast<size_t>(world_));
  MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD));
  std::int64_t total = 0;
  for (int r = 0; r < world_; ++r) {
    offsets[static_cast<size_t>(r)] = static_cast<int>(total);
    total += lengths[static_cast<size_t>(r)];
    if (total > std::numeric_limits<int>::max())
      throw Error("MpiSession::allgather: " + std::to_string(total) + " bytes over all ranks is too long for MPI");
  }
  std::vector<char> all(static_cast<size_t>(total));
  MPI_CHECK(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                           MPI_COMM_WORLD));
  std::vector<std::string> out;
  for (int r = 0; r < world_; ++r)
    out.emplace_back(all.data() + offsets[static_cast<size_t>(r)],
                     static_cast<size_t>(lengths[static_cast<size_t>(r)]));
  return out;
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

bool MpiSession::initialised() {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}

void MpiSession::abort_job(const std::string& message, int exit_code) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  if (initialised()) MPI_Abort(MPI_COMM_WORLD, exit_code);
  _exit(exit_code);
}

bool MpiSession::any(bool flag) const {
  int local = flag ? 1 : 0, global = 0;
  MPI_CHECK(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD));
  return global != 0;
}

void MpiSession::barrier() const {
  MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown";
  std::string version(text, static_cast<size_t>(length));
  const auto end = version.find_first_of("\n,");
  return version.substr(0, end);
}

}  // namespace pix2pix::dist
