// The S3-compatible server the s3 integration tests share: started once per test program by
// the environment in s3_integration_test.cc (or named by SHALE_S3_* variables), described here
// for the other test files of the program.
#pragma once

#include <memory>
#include <string>

#include "objstore/object_store.h"

namespace shale::objstore {

struct ServerInfo {
  std::string endpoint, bucket, region, access_key, secret_key;
};
extern ServerInfo g_info;

// An S3 store on the test server's endpoint with the given secret (a wrong one must be refused).
std::unique_ptr<ObjectStore> open_store(const std::string& secret, const std::string& bucket,
                                        int page_size = 1000, bool path_style = true,
                                        std::string endpoint = "");

}  // namespace shale::objstore
