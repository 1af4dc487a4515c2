#include "kbench/cemd_shards.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <system_error>
#include <thread>

#include "core/host_threads.hpp"
#include "kbench/device_memory.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/system_info.hpp"
#include "native_cuda/devices.hpp"

namespace kbench {

namespace {

using Clock = std::chrono::steady_clock;

// Automatic pieces of a part: steady pieces of about 1/kPiecesPerPart of it, each buffer then
// allocated (and its pages touched) once and reused, while a few runs pay a variant's set-up
// (allocation, the queries' upload). Reading the first piece is what nothing hides, so the pieces
// ramp up to the steady size: the first 1/kRampStart of it, each next twice the one before, which
// readers twice as fast as the matching still read while the one before is matched. Each is at
// least kLeastPieceRows rows (16 MiB; a smaller rest joins the last piece) and at most
// kMostPieceRows (512 MiB), which bounds the two pieces in memory.
constexpr int kPiecesPerPart = 4;
constexpr int kRampStart = 4;
constexpr int kLeastPieceRows = 1 << 17;
constexpr int kMostPieceRows = 1 << 22;
// Pieces copied to a GPU are at most kMostDevicePieceRows (128 MiB): their two device buffers
// stay small beside the GPU's memory, while a piece's kernels at many queries on a fast GPU still
// outlast its fixed cost (a call and a merge queued) many times over.
constexpr int kMostDevicePieceRows = 1 << 20;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Candidates of rows [first, first + count) from a variant's output: its neighbours, or every
// distance of the matrix.
std::vector<Top2> shard_top2(const CemdResult& out, std::int64_t first, bool all_pairs) {
  std::vector<Top2> top2(std::size_t(out.queries));
  for (int q = 0; q < out.queries; ++q) {
    Top2& t = top2[q];
    if (all_pairs) {
      const float* row = out.matrix.data() + std::size_t(q) * out.database;
      for (int d = 0; d < out.database; ++d)
        top2_insert(t, cemd_key(row[d], std::uint32_t(first + d)));
      continue;
    }
    const CemdNeighbours& n = out.neighbours[q];
    t = top2_of(first, n.best_index, n.best_distance, n.second_index, n.second_distance);
  }
  return top2;
}

// Copies `block`, a queries × width matrix of distances, into columns [column, column + width)
// of `into`, a queries × into_width one.
void place_columns(const std::vector<float>& block, int queries, int width,
                   std::vector<float>& into, int into_width, int column) {
  for (int q = 0; q < queries; ++q) {
    std::copy_n(block.data() + std::size_t(q) * width, width,
                into.data() + std::size_t(q) * into_width + column);
  }
}

// Reads database rows [first, first + count) into `into`, by range on up to `threads` threads,
// each a contiguous slice.
void read_rows(const RowSource& rows, std::int64_t first, int count, int threads,
               std::uint8_t* into) {
  run_on_slices(count, threads, [&](int, std::int64_t offset, std::int64_t length) {
    rows.read(first + offset, int(length), into + offset * kDescriptorBytes);
  });
}

// Rows on their way to a GPU pass through page-locked chunks of kStagingRows rows (1 MiB), one
// per reader thread: locking memory costs about as much time per byte as reading it, so a part
// locks its threads' chunks once instead of its pieces' bytes, and its pieces go up at the link's
// rate from the first one on.
constexpr int kStagingRows = 8192;
constexpr std::size_t kStagingBytes = std::size_t(kStagingRows) * kDescriptorBytes;

// The rows of one part, a piece at a time. By range, piece i + 1 is read on other threads while
// piece i is matched; otherwise the part is read whole at first (always, with a GPU) and each
// piece copied from it. Without a GPU, piece i goes to host buffer i % 2, for the host variants.
// With one, each reader thread takes a slice of the piece and moves it a chunk at a time: read
// into its staging chunk, copied on its own stream into the device buffer `to_device` gives
// (which makes the stream wait until that buffer is free), waited for, then the next chunk.
class PieceReader {
 public:
  // The device buffer that piece `piece` is copied into, `stream` made to wait until it is free.
  using DeviceBuffer = std::function<std::uint8_t*(int piece, void* stream)>;

  // device −1: no GPU (and no `to_device`).
  PieceReader(RowRange part, const RowSource& rows, int threads, const std::vector<int>& sizes,
              int device, DeviceBuffer to_device)
      : part_(part),
        rows_(rows),
        threads_(threads),
        device_(device),
        to_device_(std::move(to_device)) {
    starts_.push_back(0);
    for (const int size : sizes) starts_.push_back(starts_.back() + size);
  }
  // Waits for the work in flight (a failure in it is lost only when another is being thrown).
  ~PieceReader() {
    if (next_.valid()) next_.wait();
  }

  int pieces() const { return int(starts_.size()) - 1; }
  // Piece `piece`'s rows of the whole database.
  RowRange range(int piece) const {
    const std::size_t p = std::size_t(piece);
    return {part_.first + starts_[p], starts_[p + 1] - starts_[p]};
  }

  // Starts reading the first piece on a thread of its own; get(0) does it when nothing has.
  void start() {
    if (started_) return;
    started_ = true;
    next_ = start_thread([this] {
      if (!rows_.by_range && (pieces() > 1 || to_device_)) read_whole_part();
      load(0);
    });
  }

  // Waits until piece `piece` is read (with a GPU: in its device buffer), then starts reading
  // piece + 1; pieces are asked for in order. Returns the piece's rows without a GPU (with one,
  // an empty set).
  DescriptorSet& get(int piece) {
    const Clock::time_point start = Clock::now();
    this->start();
    next_.get();
    waited_seconds_ += seconds_since(start);
    if (piece + 1 < pieces()) next_ = start_thread([this, piece] { load(piece + 1); });
    return sets_[piece % 2];
  }

  double read_seconds() const { return read_seconds_; }
  double waited_seconds() const { return waited_seconds_; }

 private:
  // A reader thread's way to the GPU: its chunk, touched before it is locked (locking fresh pages
  // faults them in inside the driver, which holds up every other thread's memory mapping), the
  // stream its copies run on and their end.
  struct StagingSlot {
    std::vector<std::uint8_t> chunk;
    HostRegistration locked;
    DeviceStream stream;
    DeviceEvent copied;
  };

  template <class Work>
  static std::future<void> start_thread(Work work) {
    try {
      return std::async(std::launch::async, std::move(work));
    } catch (const std::system_error& e) {
      throw Error(std::string("cannot start a reader thread: ") + e.what());
    }
  }
  void read_whole_part() {
    const Clock::time_point start = Clock::now();
    whole_.count = part_.count;
    whole_.values.resize(std::size_t(part_.count) * kDescriptorBytes);
    rows_.read(part_.first, part_.count, whole_.values.data());
    read_seconds_ += seconds_since(start);
  }
  // Rows [first, first + count) of the database, from the file or from the part read whole.
  void fetch(std::int64_t first, int count, std::uint8_t* into) const {
    if (whole_.values.empty()) return rows_.read(first, count, into);
    const auto begin = whole_.values.begin() + (first - part_.first) * kDescriptorBytes;
    std::copy(begin, begin + std::ptrdiff_t(count) * kDescriptorBytes, into);
  }
  // Reader thread `slot`'s staging, made at its first piece by that thread: its chunk touched
  // (faulted in) beside the other threads' before it is locked in place.
  StagingSlot& staging_slot(int slot) {
    StagingSlot& staging = slots_[std::size_t(slot)];
    if (staging.chunk.empty()) {
      staging.chunk.resize(kStagingBytes);
      staging.locked = HostRegistration(staging.chunk.data(), staging.chunk.size());
      staging.stream = DeviceStream(device_);
      staging.copied = DeviceEvent(device_, HostWait::block);
    }
    return staging;
  }
  // Moves rows [first, first + count) through `staging` into `to` on its stream, blocked (not
  // spinning) while each copy runs, so that every core stays free for reading.
  void stage(StagingSlot& staging, std::int64_t first, int count, std::uint8_t* to) const {
    for (int done = 0; done < count; done += kStagingRows) {
      const int rows = std::min(kStagingRows, count - done);
      const std::size_t bytes = std::size_t(rows) * kDescriptorBytes;
      fetch(first + done, rows, staging.chunk.data());
      copy_rows_async(to + std::size_t(done) * kDescriptorBytes, bytes, staging.chunk.data(), bytes,
                      bytes, 1, staging.stream.handle());
      staging.copied.record(staging.stream.handle());
      staging.copied.wait();
    }
  }
  // Reads piece `piece` into host buffer piece % 2, or through the staging chunks into its
  // device buffer; one piece at a time, on a thread start_thread started.
  void load(int piece) {
    const Clock::time_point start = Clock::now();
    const RowRange rows = range(piece);
    if (to_device_) {
      if (slots_.empty()) slots_.resize(std::size_t(threads_));
      run_on_slices(rows.count, threads_, [&](int slot, std::int64_t first, std::int64_t count) {
        use_cuda_device(device_);
        StagingSlot& staging = staging_slot(slot);
        std::uint8_t* const to = to_device_(piece, staging.stream.handle());
        stage(staging, rows.first + first, int(count), to + first * kDescriptorBytes);
      });
    } else {
      DescriptorSet& set = sets_[piece % 2];
      set.count = rows.count;
      set.values.resize(std::size_t(rows.count) * kDescriptorBytes);
      if (whole_.values.empty()) {
        read_rows(rows_, rows.first, rows.count, rows_.by_range ? threads_ : 1, set.values.data());
      } else {
        fetch(rows.first, rows.count, set.values.data());
      }
    }
    read_seconds_ += seconds_since(start);
  }

  RowRange part_;
  const RowSource& rows_;
  std::vector<int> starts_;  // piece p: rows [starts_[p], starts_[p + 1]) of the part
  int threads_ = 1;
  int device_ = -1;
  DeviceBuffer to_device_;
  DescriptorSet sets_[2];  // without a GPU: the pieces' rows
  DescriptorSet whole_;    // the part, when it is not read by range and is not one host piece
  std::vector<StagingSlot> slots_;  // with a GPU: one per reader thread
  bool started_ = false;
  double read_seconds_ = 0, waited_seconds_ = 0;
  // The work in flight, declared last, so waited for before the buffers go.
  std::future<void> next_;
};

// A part's pieces matched on this thread's GPU by the library's piece matcher on device views
// (for a variant that has them), on the legacy default stream: the queries go up once, when they
// arrive (pieces may be uploaded before); each piece is copied into one of two device buffers
// (piece i into buffer i % 2) by the reader's threads on streams of their own, beside the
// matching queued before it; the matching is queued without waiting, so the GPU runs the pieces
// back to back while the host reads on, and the nearest two stay on the device until the end.
class DevicePieces {
 public:
  // On CUDA device `device` (the thread's current one), for `query_count` queries; `buffers`: 1
  // for a part of one piece, else 2.
  DevicePieces(int device, int query_count, int most_rows, int buffers,
               const Variant<Cemd>& variant, const CemdParams& params)
      : context_(ContextOptions{device}),
        queries_(std::size_t(query_count) * kDescriptorBytes, device),
        query_view_{queries_.data(), query_count, DescriptorType::u8, 0, MemoryPlace::cuda(device)},
        matcher_(context_, query_view_, CemdMatchOptions{params.distance, params.ratio, {}},
                 Choice{variant.name, "", ""}) {
    for (int b = 0; b < buffers; ++b) {
      database_[b] = DeviceMemory(std::size_t(most_rows) * kDescriptorBytes, device);
      matched_[b] = DeviceEvent(device);
    }
  }

  // Uploads the queries, before the first match().
  void set_queries(const DescriptorSet& queries) {
    copy_rows_async(queries_.data(), queries_.size(), queries.values.data(), queries_.size(),
                    queries_.size(), 1, nullptr);
  }

  // The device buffer of piece `piece`, with `stream` made to wait for the matching of the piece
  // two before (the buffer's last user); any thread may ask, with this GPU current.
  std::uint8_t* buffer_for(int piece, void* stream) {
    matched_[piece % 2].queue_wait(stream);
    return static_cast<std::uint8_t*>(database_[piece % 2].data());
  }

  // Queues the matching of `piece` (in its buffer), its `count` rows numbered from `first`.
  void match(int piece, int count, std::int64_t first) {
    const DescriptorView rows{database_[piece % 2].data(), count, DescriptorType::u8, 0,
                              query_view_.place};
    matcher_.add(rows, first);
    matched_[piece % 2].record(nullptr);
  }

  // Waits for the pieces queued; their nearest two per query as keys.
  std::vector<Top2> top2() { return matcher_.keys(); }

 private:
  Context context_;
  DeviceMemory queries_, database_[2];
  DescriptorView query_view_;
  CemdPieceMatcher matcher_;
  DeviceEvent matched_[2];  // per buffer: the end of the last matching queued on it
};

// The pieces' sizes of a part of `rows` rows: piece_rows each (the last one the rest), or
// automatic ones for `target`.
std::vector<int> piece_sizes(int rows, int piece_rows, PieceTarget target) {
  if (piece_rows == 0) return automatic_piece_sizes(rows, target);
  std::vector<int> sizes;
  for (std::int64_t first = 0; first < rows; first += piece_rows) {
    sizes.push_back(int(std::min<std::int64_t>(piece_rows, rows - first)));
  }
  return sizes;
}

// One part (all of it on this thread's device), matched a piece at a time, on the variant chosen
// for its shape: through DevicePieces where the variant runs on device views, else one run of
// the variant per piece. Its first piece is read while the queries are on their way (`queries`
// by value: each GPU thread waits on a copy of the shared future).
ShardResult match_part(PendingQueries queries, RowRange part, const RowSource& rows,
                       const ShardOptions& options, bool native_cuda_only) {
  ShardResult result;
  result.top2.assign(std::size_t(queries.count), Top2{});
  if (part.count == 0) return result;
  if (options.piece_rows < 0) throw Error("the rows per piece must not be negative");
  // The whole part's shape (counts only), validated before any row is read (the all-pairs
  // matrix's limit).
  const CemdInput shape{DescriptorSet{queries.count, {}}, DescriptorSet{part.count, {}},
                        options.params};
  validate_cemd_input(shape);
  const Variant<Cemd>& variant =
      select_cemd_variant(shape, options.variant, options.backend, native_cuda_only);
  result.variant = variant.name;
  const bool all_pairs = options.params.all_pairs;
  const bool on_views = variant.backend == Backend::cuda && variant.on_views && !all_pairs;
  const std::vector<int> sizes = piece_sizes(part.count, options.piece_rows,
                                             on_views ? PieceTarget::device : PieceTarget::host);
  if (all_pairs && sizes.size() > 1) {
    result.matrix.resize(std::size_t(queries.count) * std::size_t(part.count));
  }
  // The device's context is made before anything is timed, as a process's is at its start.
  const int device = variant.backend == Backend::cuda ? cuda_current_device() : -1;
  if (device >= 0) initialise_device(device);
  // Declared before the reader, so that it outlives the reader's last copy.
  std::unique_ptr<DevicePieces> device_pieces;
  if (on_views) {
    const Clock::time_point start = Clock::now();
    device_pieces = std::make_unique<DevicePieces>(
        device, queries.count, *std::max_element(sizes.begin(), sizes.end()),
        std::min<int>(2, int(sizes.size())), variant, options.params);
    result.seconds += seconds_since(start);
  }
  const int threads =
      options.reader_threads > 0 ? options.reader_threads : default_reader_threads(1, options.gpus);
  PieceReader::DeviceBuffer to_device;
  if (device_pieces) {
    to_device = [&device_pieces](int piece, void* stream) {
      return device_pieces->buffer_for(piece, stream);
    };
  }
  auto reader = std::make_unique<PieceReader>(part, rows, threads, sizes,
                                              device_pieces ? device : -1, std::move(to_device));
  reader->start();
  const DescriptorSet& arrived = queries.wait();
  if (device_pieces) {
    const Clock::time_point start = Clock::now();
    device_pieces->set_queries(arrived);
    result.seconds += seconds_since(start);
  }
  // The host variants' input: the queries and, in turn, each piece's rows, moved in and out.
  CemdInput input{device_pieces ? DescriptorSet{} : arrived, {}, options.params};
  // On device views the matching is queued: it runs from the first piece in hand to the
  // matches' download, beside the reading of the pieces after the first, whose waits (where the
  // GPU ran out of work) fall within it.
  Clock::time_point queued_from;
  double first_wait = 0;
  for (int p = 0; p < reader->pieces(); ++p) {
    DescriptorSet& piece_rows = reader->get(p);
    const Clock::time_point start = Clock::now();
    const RowRange range = reader->range(p);
    if (device_pieces) {
      if (p == 0) {
        queued_from = start;
        first_wait = reader->waited_seconds();
      }
      device_pieces->match(p, range.count, range.first);
    } else {
      std::swap(input.database, piece_rows);
      CemdResult out = run_once(variant, input);
      std::swap(input.database, piece_rows);
      result.seconds += seconds_since(start);
      const std::vector<Top2> top2 = shard_top2(out, range.first, all_pairs);
      merge_top2_lists(result.top2.data(), top2.data(), top2.size());
      if (all_pairs && range.count == part.count) result.matrix = std::move(out.matrix);
      if (all_pairs && range.count < part.count) {
        place_columns(out.matrix, queries.count, range.count, result.matrix, part.count,
                      int(range.first - part.first));
      }
    }
    if (options.progress) options.progress(range.count);
  }
  if (device_pieces) {
    result.top2 = device_pieces->top2();
    result.seconds += seconds_since(queued_from);
  }
  result.pieces = reader->pieces();
  result.read_seconds = reader->read_seconds();
  result.waited_seconds = device_pieces ? first_wait : reader->waited_seconds();
  if (device_pieces) {
    // Freeing the staging chunks' page-locked memory and the streams need not hold up the
    // caller's merging and writing; where no thread can start, they go here, as the work's
    // argument does.
    try {
      result.releasing.push_back(
          std::async(std::launch::async, [device, done = std::move(reader)]() mutable {
            use_cuda_device(device);
            done.reset();
          }));
    } catch (const std::system_error&) {
    }
  }
  return result;
}

}  // namespace

RowRange shard_rows(std::int64_t rows, int shards, int shard) {
  if (rows < 0 || shards < 1 || shard < 0 || shard >= shards) {
    throw Error("shard " + std::to_string(shard) + " of " + std::to_string(shards) + " over " +
                std::to_string(rows) + " rows does not exist");
  }
  const std::int64_t base = rows / shards, extra = rows % shards;
  RowRange range;
  range.first = shard * base + std::min<std::int64_t>(shard, extra);
  range.count = int(base + (shard < extra ? 1 : 0));
  return range;
}

const Variant<Cemd>& select_cemd_variant(const CemdInput& input, const std::string& variant,
                                         const std::string& backend, bool native_cuda_only) {
  VariantChoice<Cemd> choice{variant, backend, {}, {}};
  if (native_cuda_only) {
    // One process drives several GPUs only through native CUDA variants (Kokkos drives one GPU
    // per process).
    choice.only = [](const Variant<Cemd>& v) { return v.layer == Layer::native_cuda; };
    choice.only_what = "native CUDA";
  }
  return select_variant(input, choice, gpu_available());
}

std::vector<int> automatic_piece_sizes(int rows, PieceTarget target) {
  const int most = target == PieceTarget::device ? kMostDevicePieceRows : kMostPieceRows;
  const int even = rows / kPiecesPerPart + (rows % kPiecesPerPart ? 1 : 0);
  const int steady = std::clamp(even, kLeastPieceRows, most);
  std::vector<int> sizes;
  int size = std::max(kLeastPieceRows, steady / kRampStart);
  for (int left = rows; left > 0;) {
    const int piece = left - size < kLeastPieceRows ? left : size;
    sizes.push_back(piece);
    left -= piece;
    size = std::min(2 * size, steady);
  }
  return sizes;
}

int default_reader_threads(int ranks_on_node, int parts) {
  const int online = int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const int usable = usable_cores();
  const int sharing = usable < online ? 1 : std::max(1, ranks_on_node);
  return std::clamp(usable / sharing / std::max(1, parts), 1, kMostDefaultReaderThreads);
}

PendingQueries PendingQueries::ready(const DescriptorSet& queries) {
  std::promise<const DescriptorSet*> arrived;
  arrived.set_value(&queries);
  return {queries.count, arrived.get_future().share()};
}

const DescriptorSet& PendingQueries::wait() const {
  const DescriptorSet* queries = arrived.get();
  if (queries->count != count) {
    throw Error(std::to_string(queries->count) + " queries arrived where " + std::to_string(count) +
                " were counted");
  }
  return *queries;
}

ShardResult match_shard(const DescriptorSet& queries, RowRange shard, const RowSource& rows,
                        const ShardOptions& options) {
  return match_shard(PendingQueries::ready(queries), shard, rows, options);
}

ShardResult match_shard(const PendingQueries& queries, RowRange shard, const RowSource& rows,
                        const ShardOptions& options) {
  if (options.gpus < 1) throw Error("the number of GPUs per process must be at least 1");
  if (options.reader_threads < 0 || options.reader_threads > kMaxReaderThreads) {
    throw Error("the reader threads per part must be from 1 to " +
                std::to_string(kMaxReaderThreads) + " (0: as many as the cores allow), not " +
                std::to_string(options.reader_threads));
  }
  if (options.gpus == 1) return match_part(queries, shard, rows, options, false);

  // One host thread per GPU, each on its own part of the shard.
  const int gpus = options.gpus;
  std::vector<ShardResult> parts(static_cast<std::size_t>(gpus));
  run_on_threads(gpus, [&](int g) {
    const int device = options.first_gpu + g;
    try {
      use_cuda_device(device);
      RowRange part = shard_rows(shard.count, gpus, g);
      part.first += shard.first;
      parts[g] = match_part(queries, part, rows, options, true);
    } catch (const Error& e) {
      throw Error("GPU " + std::to_string(device) + ": " + e.what());
    }
  });
  // The slowest GPU's times, as the slowest rank's across ranks: each thread's device set-up is
  // not matching.
  ShardResult result;
  for (ShardResult& part : parts) {
    for (std::future<void>& release : part.releasing)
      result.releasing.push_back(std::move(release));
    result.seconds = std::max(result.seconds, part.seconds);
    result.read_seconds = std::max(result.read_seconds, part.read_seconds);
    result.waited_seconds = std::max(result.waited_seconds, part.waited_seconds);
    result.pieces = std::max(result.pieces, part.pieces);
  }
  result.top2.assign(std::size_t(queries.count), Top2{});
  if (options.params.all_pairs) {
    result.matrix.resize(std::size_t(queries.count) * std::size_t(shard.count));
  }
  int column = 0;
  for (const ShardResult& part : parts) {
    merge_top2_lists(result.top2.data(), part.top2.data(), result.top2.size());
    if (result.variant.empty()) result.variant = part.variant;
    if (!options.params.all_pairs || part.variant.empty()) continue;
    const int width = int(part.matrix.size() / std::size_t(queries.count));
    place_columns(part.matrix, queries.count, width, result.matrix, shard.count, column);
    column += width;
  }
  return result;
}

void merge_top2_lists(Top2* into, const Top2* other, std::size_t queries) {
  for (std::size_t q = 0; q < queries; ++q) into[q] = top2_merge(into[q], other[q]);
}

CemdResult result_from_top2(const std::vector<Top2>& top2, int database) {
  CemdResult result;
  result.queries = int(top2.size());
  result.database = database;
  result.neighbours.reserve(top2.size());
  for (const Top2& t : top2) result.neighbours.push_back(neighbours_from(t));
  return result;
}

int cuda_device_count() {
#if defined(KBENCH_HAVE_CUDA)
  return cuda::device_count();
#else
  return 0;
#endif
}

int cuda_current_device() {
#if defined(KBENCH_HAVE_CUDA)
  return cuda::current_device();
#else
  throw Error("this build has no CUDA support, so it has no current GPU");
#endif
}

void use_cuda_device(int device) {
#if defined(KBENCH_HAVE_CUDA)
  cuda::set_device(device);
#else
  throw Error("this build has no CUDA support, so it cannot use GPU " + std::to_string(device));
#endif
}

}  // namespace kbench
