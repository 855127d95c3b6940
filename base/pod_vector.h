#pragma once
// PodVector: a growable array of trivially copyable values for the flow network's large flat
// arrays (millions of flows). It grows with realloc, which for large blocks remaps pages instead
// of copying them; std::vector's allocate-copy-free doubling touched every page twice and cost a
// fifth of a 4-million-flow AllToAll in page faults. Iterators are plain pointers, so the
// standard algorithms apply. Only the std::vector operations the network code uses exist.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace podsim {

template <class T>
class PodVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "PodVector holds plain data only");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  PodVector() = default;
  PodVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  PodVector(const PodVector& o) { assign(o.begin(), o.end()); }
  PodVector(PodVector&& o) noexcept { swap(o); }
  PodVector& operator=(const PodVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  PodVector& operator=(PodVector&& o) noexcept {
    PodVector(std::move(o)).swap(*this);
    return *this;
  }
  ~PodVector() { std::free(data_); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    // Also what lets the compiler see the byte count below is a valid object size.
    if (n > static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(T)) {
      throw std::length_error("PodVector: " + std::to_string(n) +
                              " elements overflow the byte count");
    }
    void* p = std::realloc(static_cast<void*>(data_), n * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    capacity_ = n;
  }
  void push_back(const T& v) {
    if (size_ == capacity_) Grow(size_ + 1);
    data_[size_++] = v;
  }
  // New elements are value-initialised (zero for arithmetic types).
  void resize(std::size_t n, const T& v = T()) {
    if (n > size_) {
      if (n > capacity_) Grow(n);
      std::fill(data_ + size_, data_ + n, v);
    }
    size_ = n;
  }
  void clear() { size_ = 0; }
  template <class It>
  void assign(It first, It last) {
    clear();
    append(first, last);
  }
  void assign(std::size_t n, const T& v) {
    clear();
    resize(n, v);
  }
  template <class It>
  void append(It first, It last) {
    const auto n = static_cast<std::size_t>(std::distance(first, last));
    if (size_ + n > capacity_) Grow(size_ + n);
    std::copy(first, last, data_ + size_);
    size_ += n;
  }
  // Removes [first, last).
  T* erase(T* first, T* last) {
    std::memmove(static_cast<void*>(first), static_cast<const void*>(last),
                 static_cast<std::size_t>(end() - last) * sizeof(T));
    size_ -= static_cast<std::size_t>(last - first);
    return first;
  }
  void swap(PodVector& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
  }
  friend bool operator==(const PodVector& a, const PodVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  void Grow(std::size_t at_least) { reserve(std::max<std::size_t>({at_least, 2 * capacity_, 16})); }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace podsim
