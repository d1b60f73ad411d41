// Output files that survive concurrent and interrupted runs (see output_files.h).
#include "scenarios/output_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <cstdio>
#include <system_error>
#include <thread>

namespace scenarios {

namespace fs = std::filesystem;

void prepare_output_directory(const fs::path& directory) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error || !fs::is_directory(directory)) {
    throw OutputError(fmt::format("cannot create the output directory {}: {}", directory.string(),
                                  error ? error.message() : "a file of that name exists"));
  }
}

namespace {

// The signals that end a run from the terminal or a job scheduler.
constexpr int kEndingSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr std::size_t kSignalCount = std::size(kEndingSignals);

// The temporaries being written, for the signal handler, which may run in any thread: fixed
// storage, a lock-free count published after the path (release/acquire), nothing allocated or
// locked in the handler (unlink, sigaction and raise are async-signal-safe).
constexpr std::size_t kMaxPending = 8;
char pending_paths[kMaxPending][PATH_MAX];
std::atomic<std::size_t> pending_count{0};
// While the files are renamed into place an ending signal is only noted, and raised once all
// are renamed: a run's files land together.
std::atomic<bool> renaming{false};
std::atomic<int> deferred_signal{0};
struct sigaction previous_actions[kSignalCount];
bool handled[kSignalCount];  // false where the signal was ignored (nohup): it stays ignored
static_assert(std::atomic<std::size_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

// Removes the temporaries, then ends the process as `signal` would have without dtsim's handler.
void remove_pending_and_raise(int signal) {
  for (std::size_t i = 0; i < pending_count.load(std::memory_order_acquire); ++i) unlink(pending_paths[i]);
  for (std::size_t s = 0; s < kSignalCount; ++s) {
    if (kEndingSignals[s] == signal) sigaction(signal, &previous_actions[s], nullptr);
  }
  raise(signal);  // delivered once the handler returns (or at once, outside one)
}

extern "C" void on_ending_signal(int signal) {
  const int saved_errno = errno;
  if (renaming.load()) {
    deferred_signal.store(signal);
  } else {
    remove_pending_and_raise(signal);
  }
  errno = saved_errno;
}

// The temporaries of one write: uniquely named, removed on failure, destruction or an ending
// signal. One write at a time per process (write_files_atomically holds a mutex).
class PendingTemporaries {
 public:
  PendingTemporaries() {
    struct sigaction action {};
    action.sa_handler = on_ending_signal;
    sigemptyset(&action.sa_mask);
    for (std::size_t s = 0; s < kSignalCount; ++s) {
      sigaction(kEndingSignals[s], nullptr, &previous_actions[s]);
      handled[s] = (previous_actions[s].sa_flags & SA_SIGINFO) != 0 || previous_actions[s].sa_handler != SIG_IGN;
      if (handled[s]) sigaction(kEndingSignals[s], &action, nullptr);
    }
  }
  ~PendingTemporaries() {
    for (std::size_t i = 0; i < pending_count.load(); ++i) unlink(pending_paths[i]);
    pending_count.store(0);
    for (std::size_t s = 0; s < kSignalCount; ++s) {
      if (handled[s]) sigaction(kEndingSignals[s], &previous_actions[s], nullptr);
    }
  }
  PendingTemporaries(const PendingTemporaries&) = delete;
  PendingTemporaries& operator=(const PendingTemporaries&) = delete;

  // Creates an empty temporary beside `target` (".NAME.PID-N.tmp"), registered for removal
  // before it exists.
  fs::path create_beside(const fs::path& target) {
    const std::size_t slot = pending_count.load();
    if (slot == kMaxPending) {
      throw OutputError(fmt::format("cannot write {}: more than {} files at once", target.string(), kMaxPending));
    }
    for (unsigned attempt = 0;; ++attempt) {
      const fs::path temporary =
          target.parent_path() / fmt::format(".{}.{}-{}.tmp", target.filename().string(), getpid(), attempt);
      const std::string name = temporary.string();
      if (name.size() >= PATH_MAX) throw OutputError(fmt::format("cannot write {}: the path is too long", target.string()));
      std::memcpy(pending_paths[slot], name.c_str(), name.size() + 1);
      pending_count.store(slot + 1, std::memory_order_release);
      const int fd = open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        close(fd);
        return temporary;
      }
      const int error = errno;
      pending_count.store(slot);  // not ours: never remove it
      if (error != EEXIST || attempt > 1000) {
        throw OutputError(fmt::format("cannot write {}: {}", target.string(), std::strerror(error)));
      }
    }
  }

  // Renames every temporary to its target, as one step for the ending signals (noted while it
  // runs, raised after). Throws OutputError if a rename fails (the remaining temporaries are
  // then removed; the files renamed before it stay).
  void rename_all(const std::vector<fs::path>& temporaries, const std::vector<FileWriter>& files) {
    renaming.store(true);
    std::error_code error;
    std::size_t renamed = 0;
    for (; renamed < files.size() && !error; ++renamed) fs::rename(temporaries[renamed], files[renamed].first, error);
    if (!error) pending_count.store(0);
    renaming.store(false);
    if (const int signal = deferred_signal.exchange(0); signal != 0) remove_pending_and_raise(signal);
    if (error) throw OutputError(fmt::format("cannot write {}: {}", files[renamed - 1].first.string(), error.message()));
  }
};

// An exclusive advisory lock (flock) on a folder, held while alive: writers into one folder take
// turns. The folder is opened first (its identity decides which folders are one); lock() waits up
// to `wait_s` for another holder, saying once on stderr that it waits.
class FolderLock {
 public:
  FolderLock(const fs::path& folder, const fs::path& file) : folder_(folder), fd_(open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ < 0) throw OutputError(fmt::format("cannot write {}: {}: {}", file.string(), folder.string(), std::strerror(errno)));
    struct stat status {};
    fstat(fd_, &status);
    identity_ = {status.st_dev, status.st_ino};
  }
  ~FolderLock() { close(fd_); }  // releases the lock
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  std::pair<dev_t, ino_t> identity() const { return identity_; }

  void lock(double wait_s) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    bool said = false;
    while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) return;  // a file system without locks: write unlocked
      if (std::chrono::steady_clock::now() > deadline) {
        throw OutputError(fmt::format("another dtsim has been writing into {} for {:.0f} s; wait for it to finish, or "
                                      "write elsewhere",
                                      folder_.string(), wait_s));
      }
      if (!said) {
        std::fprintf(stderr, "dtsim: waiting for another dtsim writing into %s\n", folder_.c_str());
        said = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  fs::path folder_;
  int fd_;
  std::pair<dev_t, ino_t> identity_;
};

fs::path folder_of(const fs::path& file) { return file.has_parent_path() ? file.parent_path() : fs::path("."); }

}  // namespace

void write_files_atomically(const std::vector<FileWriter>& files, double lock_wait_s) {
  static std::mutex one_write_at_a_time;  // the signal handler's list is the process's
  const std::lock_guard guard(one_write_at_a_time);
  // Each target folder once (two spellings of one folder are one), locked in the order of their
  // identities: two writers never wait for each other.
  std::vector<std::unique_ptr<FolderLock>> folders;
  for (const auto& [path, write] : files) {
    auto folder = std::make_unique<FolderLock>(folder_of(path), path);
    const bool known = std::any_of(folders.begin(), folders.end(),
                                   [&](const auto& other) { return other->identity() == folder->identity(); });
    if (!known) folders.push_back(std::move(folder));
  }
  std::sort(folders.begin(), folders.end(), [](const auto& a, const auto& b) { return a->identity() < b->identity(); });
  for (const auto& folder : folders) folder->lock(lock_wait_s);

  PendingTemporaries pending;
  std::vector<fs::path> temporaries;
  for (const auto& [path, write] : files) {
    if (fs::is_directory(path)) throw OutputError(fmt::format("cannot write {}: a directory of that name exists", path.string()));
    temporaries.push_back(pending.create_beside(path));
    std::ofstream out(temporaries.back(), std::ios::binary | std::ios::trunc);
    if (out.is_open()) write(out);
    out.close();
    if (!out) throw OutputError(fmt::format("cannot write {}", path.string()));
  }
  for (const auto& [path, write] : files) {  // what could make a rename fail, checked before the first
    if (fs::is_directory(path)) throw OutputError(fmt::format("cannot write {}: a directory of that name exists", path.string()));
  }
  pending.rename_all(temporaries, files);
}

void write_file_atomically(const fs::path& path, const std::function<void(std::ostream&)>& write, double lock_wait_s) {
  write_files_atomically({{path, write}}, lock_wait_s);
}

std::uint64_t fnv1a64(std::string_view text, std::uint64_t digest) {
  constexpr std::uint64_t kFnvPrime = 0x100000001b3;
  for (const char c : text) digest = (digest ^ static_cast<unsigned char>(c)) * kFnvPrime;
  return digest;
}

void DigestingBuffer::add(const char* text, std::streamsize count) {
  digest_ = fnv1a64(std::string_view(text, static_cast<std::size_t>(count)), digest_);
}

DigestingBuffer::int_type DigestingBuffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char byte = traits_type::to_char_type(c);
  if (traits_type::eq_int_type(target_->sputc(byte), traits_type::eof())) return traits_type::eof();
  add(&byte, 1);
  return c;
}

std::streamsize DigestingBuffer::xsputn(const char* text, std::streamsize count) {
  const std::streamsize written = target_->sputn(text, count);
  add(text, written);
  return written;
}

std::string format_digest(std::uint64_t digest) { return fmt::format("fnv1a64:{:016x}", digest); }

}  // namespace scenarios
