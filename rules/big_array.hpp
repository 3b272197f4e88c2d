// BigArray: a fixed-size array of a trivially copyable type, for the two big tables of a
// DomainSet (its byte arena and its hash slots).
//
// Why not std::vector: a million-entry blocklist makes each table tens of MiB, and a lookup lands
// at a random place in them. With 4 KiB pages nearly every such lookup also misses the TLB, so
// from 2 MiB up the array is mapped directly (mmap), aligned to a 2 MiB boundary and, on Linux,
// advised onto transparent huge pages before it is first touched (advice given after the first
// touch would leave the pages small until khugepaged gets round to them). Below 2 MiB, or where
// mapping fails or is not offered, it is one ordinary heap block; the behaviour is the same, only
// the lookups are slower. The size is fixed at construction because the tables are built once
// and then only read: nothing needs growth, and the mapped size must be known up front.
//
// Not thread-safe to modify; a built array that is only read may be shared between threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace sandgate::rules {

template <typename T>
class BigArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  BigArray() = default;
  // `count` copies of `fill`.
  BigArray(std::size_t count, const T& fill) {
    allocate(count);
    std::uninitialized_fill_n(data_, count, fill);
  }
  // A copy of [first, first + count).
  BigArray(const T* first, std::size_t count) {
    allocate(count);
    std::uninitialized_copy_n(first, count, data_);
  }
  BigArray(BigArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        map_base_(std::exchange(other.map_base_, nullptr)),
        map_length_(std::exchange(other.map_length_, 0)) {}
  BigArray& operator=(BigArray&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      map_base_ = std::exchange(other.map_base_, nullptr);
      map_length_ = std::exchange(other.map_length_, 0);
    }
    return *this;
  }
  BigArray(const BigArray&) = delete;
  BigArray& operator=(const BigArray&) = delete;
  ~BigArray() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  // Memory held: what is in use, rounded up to the page size that backs it.
  std::size_t bytes() const {
    return map_base_ != nullptr ? round_up(size_ * sizeof(T), kHugePage) : size_ * sizeof(T);
  }
  // Whether the array is mapped on its own (huge-page candidate) rather than on the heap.
  bool mapped() const { return map_base_ != nullptr; }

 private:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

  void allocate(std::size_t count) {
    size_ = count;
    const std::size_t bytes = count * sizeof(T);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= kHugePage) {
      // Map one huge page more than needed, so that the array can start on a huge-page boundary.
      const std::size_t length = round_up(bytes, kHugePage) + kHugePage;
      void* base =
          ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (base != MAP_FAILED) {
        const auto aligned = round_up(reinterpret_cast<std::uintptr_t>(base), kHugePage);
        // Advice only: without huge pages the array works the same, just slower.
        ::madvise(reinterpret_cast<void*>(aligned), round_up(bytes, kHugePage), MADV_HUGEPAGE);
        map_base_ = base;
        map_length_ = length;
        data_ = reinterpret_cast<T*>(aligned);
        return;
      }
    }
#endif
    data_ = static_cast<T*>(::operator new(std::max<std::size_t>(bytes, 1)));
  }

  void release() {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (map_base_ != nullptr) {
      ::munmap(map_base_, map_length_);
      map_base_ = nullptr;
      data_ = nullptr;
      return;
    }
#endif
    ::operator delete(data_);
    data_ = nullptr;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  void* map_base_ = nullptr;  // non-null when mapped
  std::size_t map_length_ = 0;
};

}  // namespace sandgate::rules
