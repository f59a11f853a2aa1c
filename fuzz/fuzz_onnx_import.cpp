// libFuzzer harness: bytes -> ModelProto -> checks -> ONNX shape inference -> constant folding ->
// operator graph -> MAC counts. Any outcome but a result or a UserError is a bug (a crash, an
// uncaught exception, a hang, or memory beyond -rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/base/error.h"
#include "workloads/onnx/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const archsim::ImportResult r = archsim::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
        volatile int64_t macs = r.graph.total_macs();
        (void)macs;
    } catch (const archsim::UserError&) {
    }
    return 0;
}
