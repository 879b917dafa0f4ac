// Helpers shared by the objstore unit tests: scratch directories and synchronous multipart.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <string>

#include "objstore/object_store.h"

namespace shale::objstore::testing_util {

// A fresh directory under the test temp dir, removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = std::filesystem::temp_directory_path().string() + "/shale-objstore-XXXXXX";
    char* p = ::mkdtemp(tmpl.data());
    path_ = p ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline BufferChain chain(std::string_view s) {
  BufferChain c;
  c.push_back(Buffer::copy(s));
  return c;
}

inline Result<std::unique_ptr<MultipartUpload>> create_multipart_sync(ObjectStore& s,
                                                                      const std::string& key) {
  std::promise<Result<std::unique_ptr<MultipartUpload>>> p;
  auto f = p.get_future();
  s.create_multipart(
      key, [&p](Result<std::unique_ptr<MultipartUpload>> r) { p.set_value(std::move(r)); });
  return f.get();
}

inline Status part_sync(MultipartUpload& u, int n, BufferChain data) {
  std::promise<Status> p;
  auto f = p.get_future();
  u.upload_part(n, std::move(data), [&p](Status s) { p.set_value(std::move(s)); });
  return f.get();
}

inline Status complete_sync(MultipartUpload& u) {
  std::promise<Status> p;
  auto f = p.get_future();
  u.complete([&p](Status s) { p.set_value(std::move(s)); });
  return f.get();
}

inline Status abort_sync(MultipartUpload& u) {
  std::promise<Status> p;
  auto f = p.get_future();
  u.abort([&p](Status s) { p.set_value(std::move(s)); });
  return f.get();
}

}  // namespace shale::objstore::testing_util
