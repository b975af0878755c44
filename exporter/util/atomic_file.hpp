// Writes a whole file so that readers see the old content or the new, never
// half of it: the text goes to PATH.tmp, which is then renamed over PATH.
// Used for the HTML reports of `run --report` and `report --out`.
#pragma once
#include <string>

namespace lse::util {

// Throws std::runtime_error "cannot write 'PATH': why" when the file cannot
// be written or renamed.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace lse::util
