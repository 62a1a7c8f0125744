#include "dumpcmp/source.hpp"

#include <stdexcept>
#include <string>

namespace dumpcmp {

TensorSource::TensorSource(const std::uint8_t* data, DataType type, std::uint64_t stored_count,
                           std::shared_ptr<const Plan> plan, MappedFilePtr keep_alive)
    : data_(data), type_(type), stored_count_(stored_count), plan_(std::move(plan)),
      keep_alive_(std::move(keep_alive)) {
    const DataTypeInfo& info = data_type_info(type);
    if (info.repr == Repr::none)
        throw std::invalid_argument(std::string("data type ") + info.name + " has no numeric value to compare");
    elem_bytes_ = info.bits % 8 == 0 ? static_cast<std::size_t>(info.bits / 8) : 0;
    stored_bytes_ = storage_bytes(info, stored_count);
    if (plan_) {
        if (plan_->encode) throw std::invalid_argument("a comparison reads through a decode plan, not an encode plan");
        if (plan_->src_count != stored_count)
            throw std::invalid_argument("layout plan expects " + std::to_string(plan_->src_count) +
                                        " stored elements, the tensor has " + std::to_string(stored_count));
        if (elem_bytes_ != 0 && plan_->elem_size != elem_bytes_)
            throw std::invalid_argument("layout plan element size does not match the data type");
    }
    direct_float_ = !plan_ && type == DataType::FLOAT && reinterpret_cast<std::uintptr_t>(data) % alignof(float) == 0;
}

const float* TensorSource::read_float32(std::uint64_t first, std::size_t n, SourceScratch& s) const {
    if (direct_float_) return reinterpret_cast<const float*>(data_) + first;
    if (s.values.size() < n) s.values.resize(n);
    float* out = s.values.data();
    if (!plan_) {
        decode_to_float32(type_, data_, first, n, out);
    } else if (elem_bytes_ != 0) {
        // gather the stored bytes into compared order with the layout kernel, then decode contiguously
        if (s.bytes.size() < n * elem_bytes_) s.bytes.resize(n * elem_bytes_);
        decode_range(*plan_, data_, first, n, s.bytes.data());
        decode_to_float32(type_, s.bytes.data(), 0, n, out);
    } else {
        // packed sub-byte types: element by element through the source indices
        if (s.indices.size() < n) s.indices.resize(n);
        dumpcmp::source_indices(*plan_, first, n, s.indices.data());
        for (std::size_t i = 0; i < n; ++i) decode_to_float32(type_, data_, s.indices[i], 1, out + i);
    }
    return out;
}

void TensorSource::prefault() const noexcept { dumpcmp::prefault(data_, static_cast<std::size_t>(stored_bytes_)); }

TensorSource::Window TensorSource::read_window(std::uint64_t first, std::size_t n, SourceScratch& s) const {
    if (elem_bytes_ == 0) {
        return {reinterpret_cast<const std::uint8_t*>(read_float32(first, n, s)), DataType::FLOAT};
    }
    if (!plan_) return {data_ + first * elem_bytes_, type_};
    if (s.bytes.size() < n * elem_bytes_) s.bytes.resize(n * elem_bytes_);
    decode_range(*plan_, data_, first, n, s.bytes.data());
    return {s.bytes.data(), type_};
}

void TensorSource::source_indices(std::uint64_t first, std::size_t n, std::uint64_t* out) const {
    if (plan_) {
        dumpcmp::source_indices(*plan_, first, n, out);
    } else {
        for (std::size_t i = 0; i < n; ++i) out[i] = first + i;
    }
}

}  // namespace dumpcmp
