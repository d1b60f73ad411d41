// Output files that survive concurrent and interrupted runs (see output_files.h).
#include "scenarios/output_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <map>
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

// The temporaries being written, for the signal handler: fixed storage, nothing allocated or
// locked in the handler (unlink, sigaction and raise are async-signal-safe).
constexpr std::size_t kMaxPending = 8;
char pending_paths[kMaxPending][PATH_MAX];
volatile sig_atomic_t pending_count = 0;
struct sigaction previous_actions[kSignalCount];
bool handled[kSignalCount];  // false where the signal was ignored (nohup): it stays ignored

extern "C" void remove_pending_and_end(int signal) {
  for (sig_atomic_t i = 0; i < pending_count; ++i) unlink(pending_paths[i]);
  for (std::size_t s = 0; s < kSignalCount; ++s) {
    if (kEndingSignals[s] == signal) sigaction(signal, &previous_actions[s], nullptr);
  }
  raise(signal);  // delivered once this handler returns, as the signal would have been
}

// The signal mask with the ending signals.
sigset_t ending_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int signal : kEndingSignals) sigaddset(&set, signal);
  return set;
}

// Holds the ending signals back while alive (a run's renames are not cut in two).
class HeldSignals {
 public:
  HeldSignals() {
    const sigset_t set = ending_signals();
    pthread_sigmask(SIG_BLOCK, &set, &previous_);
  }
  ~HeldSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

 private:
  sigset_t previous_;
};

// The temporaries of one write: uniquely named, removed on failure, destruction or an ending
// signal. One at a time per process (write_files_atomically holds a mutex).
class PendingTemporaries {
 public:
  PendingTemporaries() {
    struct sigaction action {};
    action.sa_handler = remove_pending_and_end;
    sigemptyset(&action.sa_mask);
    const HeldSignals held;  // the handler never sees a half-installed state
    for (std::size_t s = 0; s < kSignalCount; ++s) {
      sigaction(kEndingSignals[s], nullptr, &previous_actions[s]);
      handled[s] = (previous_actions[s].sa_flags & SA_SIGINFO) != 0 || previous_actions[s].sa_handler != SIG_IGN;
      if (handled[s]) sigaction(kEndingSignals[s], &action, nullptr);
    }
  }
  ~PendingTemporaries() {
    remove_all();
    const HeldSignals held;
    for (std::size_t s = 0; s < kSignalCount; ++s) {
      if (handled[s]) sigaction(kEndingSignals[s], &previous_actions[s], nullptr);
    }
  }
  PendingTemporaries(const PendingTemporaries&) = delete;
  PendingTemporaries& operator=(const PendingTemporaries&) = delete;

  // Creates an empty temporary beside `target` (".NAME.PID-N.tmp"), registered for removal.
  fs::path create_beside(const fs::path& target) {
    if (static_cast<std::size_t>(pending_count) == kMaxPending) {
      throw OutputError(fmt::format("cannot write {}: more than {} files at once", target.string(), kMaxPending));
    }
    for (unsigned attempt = 0;; ++attempt) {
      const fs::path temporary =
          target.parent_path() / fmt::format(".{}.{}-{}.tmp", target.filename().string(), getpid(), attempt);
      const std::string name = temporary.string();
      if (name.size() >= PATH_MAX) throw OutputError(fmt::format("cannot write {}: the path is too long", target.string()));
      {
        const HeldSignals held;
        std::memcpy(pending_paths[pending_count], name.c_str(), name.size() + 1);
        pending_count = pending_count + 1;
      }
      const int fd = open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        close(fd);
        return temporary;
      }
      const int error = errno;
      forget_last();
      if (error != EEXIST || attempt > 1000) {
        throw OutputError(fmt::format("cannot write {}: {}", target.string(), std::strerror(error)));
      }
    }
  }

  // The files were renamed into place: nothing left to remove.
  void forget_all() {
    const HeldSignals held;
    pending_count = 0;
  }

  void remove_all() {
    const HeldSignals held;
    for (sig_atomic_t i = 0; i < pending_count; ++i) unlink(pending_paths[i]);
    pending_count = 0;
  }

 private:
  void forget_last() {
    const HeldSignals held;
    pending_count = pending_count - 1;
  }
};

// An exclusive advisory lock (flock) on the folder of `file`, held while alive: writers into one
// folder take turns. Waits up to `wait_s` for another holder.
class FolderLock {
 public:
  FolderLock(const fs::path& folder, const fs::path& file, double wait_s)
      : fd_(open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ < 0) throw OutputError(fmt::format("cannot write {}: {}: {}", file.string(), folder.string(), std::strerror(errno)));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) break;  // a file system without locks: write unlocked
      if (std::chrono::steady_clock::now() > deadline) {
        close(fd_);
        throw OutputError(fmt::format("another dtsim has been writing into {} for {:.0f} s; wait for it to finish, or "
                                      "write elsewhere",
                                      folder.string(), wait_s));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~FolderLock() { close(fd_); }  // releases the lock
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};

fs::path folder_of(const fs::path& file) { return file.has_parent_path() ? file.parent_path() : fs::path("."); }

}  // namespace

void write_files_atomically(const std::vector<FileWriter>& files, double lock_wait_s) {
  static std::mutex one_write_at_a_time;  // the signal handler's list is the process's
  const std::lock_guard guard(one_write_at_a_time);
  // Each target folder (→ a file in it, for messages), locked in sorted order: two writers never
  // wait for each other.
  std::map<fs::path, fs::path> folders;
  for (const auto& [path, write] : files) folders.emplace(folder_of(path), path);
  std::vector<std::unique_ptr<FolderLock>> locks;
  for (const auto& [folder, file] : folders) locks.push_back(std::make_unique<FolderLock>(folder, file, lock_wait_s));

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
  const HeldSignals held;  // all of the files land, or (on an error) none of the rest
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code error;
    fs::rename(temporaries[i], files[i].first, error);
    if (error) throw OutputError(fmt::format("cannot write {}: {}", files[i].first.string(), error.message()));
  }
  pending.forget_all();
}

void write_file_atomically(const fs::path& path, const std::function<void(std::ostream&)>& write, double lock_wait_s) {
  write_files_atomically({{path, write}}, lock_wait_s);
}

void DigestingBuffer::add(const char* text, std::streamsize count) {
  constexpr std::uint64_t kFnvPrime = 0x100000001b3;
  for (std::streamsize i = 0; i < count; ++i) {
    digest_ = (digest_ ^ static_cast<unsigned char>(text[i])) * kFnvPrime;
  }
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
