#pragma once
// The field numbers of Perfetto's trace protos (protos/perfetto/trace/ in the Perfetto
// repository) that cutrace writes and reads, named as in the .proto files. Only this list, no
// generated code: the writer and the reader both use these names.

#include <cstdint>

namespace cutrace::pf {

namespace Trace {
inline constexpr uint32_t kPacket = 1;
}

namespace TracePacket {
inline constexpr uint32_t kChromeEvents = 5;
inline constexpr uint32_t kClockSnapshot = 6;
inline constexpr uint32_t kTimestamp = 8;
inline constexpr uint32_t kTrustedPacketSequenceId = 10;
inline constexpr uint32_t kTrackEvent = 11;
inline constexpr uint32_t kInternedData = 12;
inline constexpr uint32_t kSequenceFlags = 13;
inline constexpr uint32_t kTimestampClockId = 58;
inline constexpr uint32_t kTracePacketDefaults = 59;
inline constexpr uint32_t kTrackDescriptor = 60;
inline constexpr uint32_t kFirstPacketOnSequence = 87;
// sequence_flags
inline constexpr uint32_t kSeqIncrementalStateCleared = 1;
inline constexpr uint32_t kSeqNeedsIncrementalState = 2;
}  // namespace TracePacket

namespace TracePacketDefaults {
inline constexpr uint32_t kTrackEventDefaults = 11;
inline constexpr uint32_t kTimestampClockId = 58;
}  // namespace TracePacketDefaults

namespace TrackEventDefaults {
inline constexpr uint32_t kTrackUuid = 11;
}

namespace ClockSnapshot {
inline constexpr uint32_t kClocks = 1;
inline constexpr uint32_t kPrimaryTraceClock = 2;
}  // namespace ClockSnapshot

namespace ClockSnapshotClock {
inline constexpr uint32_t kClockId = 1;
inline constexpr uint32_t kTimestamp = 2;
inline constexpr uint32_t kIsIncremental = 3;
}  // namespace ClockSnapshotClock

// BuiltinClock values, and the first sequence-scoped clock id (64..127), which Perfetto's own
// SDK uses for its incremental (delta-encoded) timestamps.
namespace BuiltinClock {
inline constexpr uint32_t kRealtime = 1;
inline constexpr uint32_t kMonotonic = 3;
inline constexpr uint32_t kBoottime = 6;
inline constexpr uint32_t kSequenceIncremental = 64;
}  // namespace BuiltinClock

namespace TrackDescriptor {
inline constexpr uint32_t kUuid = 1;
inline constexpr uint32_t kName = 2;
inline constexpr uint32_t kProcess = 3;
inline constexpr uint32_t kThread = 4;
inline constexpr uint32_t kParentUuid = 5;
inline constexpr uint32_t kCounter = 8;
inline constexpr uint32_t kSiblingOrderRank = 12;
}  // namespace TrackDescriptor

namespace ProcessDescriptor {
inline constexpr uint32_t kPid = 1;
inline constexpr uint32_t kCmdline = 2;
inline constexpr uint32_t kProcessName = 6;
}  // namespace ProcessDescriptor

namespace ThreadDescriptor {
inline constexpr uint32_t kPid = 1;
inline constexpr uint32_t kTid = 2;
inline constexpr uint32_t kThreadName = 5;
}  // namespace ThreadDescriptor

namespace CounterDescriptor {
inline constexpr uint32_t kUnit = 3;
inline constexpr uint32_t kUnitCount = 2;
inline constexpr uint32_t kUnitSizeBytes = 3;
}  // namespace CounterDescriptor

namespace TrackEvent {
inline constexpr uint32_t kCategoryIids = 3;
inline constexpr uint32_t kDebugAnnotations = 4;
inline constexpr uint32_t kType = 9;
inline constexpr uint32_t kNameIid = 10;
inline constexpr uint32_t kTrackUuid = 11;
inline constexpr uint32_t kName = 23;
inline constexpr uint32_t kCounterValue = 30;
inline constexpr uint32_t kFlowIds = 47;             // fixed64
inline constexpr uint32_t kTerminatingFlowIds = 48;  // fixed64
inline constexpr uint32_t kCallstackIid = 56;
// type
inline constexpr uint32_t kTypeSliceBegin = 1;
inline constexpr uint32_t kTypeSliceEnd = 2;
inline constexpr uint32_t kTypeInstant = 3;
inline constexpr uint32_t kTypeCounter = 4;
}  // namespace TrackEvent

namespace DebugAnnotation {
inline constexpr uint32_t kNameIid = 1;
inline constexpr uint32_t kBoolValue = 2;
inline constexpr uint32_t kUintValue = 3;
inline constexpr uint32_t kIntValue = 4;
inline constexpr uint32_t kStringValue = 6;
inline constexpr uint32_t kPointerValue = 7;
inline constexpr uint32_t kName = 10;
inline constexpr uint32_t kStringValueIid = 17;
}  // namespace DebugAnnotation

namespace InternedData {
inline constexpr uint32_t kEventCategories = 1;
inline constexpr uint32_t kEventNames = 2;
inline constexpr uint32_t kDebugAnnotationNames = 3;
inline constexpr uint32_t kFunctionNames = 5;
inline constexpr uint32_t kFrames = 6;
inline constexpr uint32_t kCallstacks = 7;
inline constexpr uint32_t kDebugAnnotationStringValues = 29;
}  // namespace InternedData

// EventName, EventCategory, DebugAnnotationName: {iid, name}; InternedString: {iid, str}.
namespace InternedEntry {
inline constexpr uint32_t kIid = 1;
inline constexpr uint32_t kName = 2;  // `str` of InternedString has the same number
}  // namespace InternedEntry

namespace Frame {
inline constexpr uint32_t kIid = 1;
inline constexpr uint32_t kFunctionNameId = 2;
}  // namespace Frame

namespace Callstack {
inline constexpr uint32_t kIid = 1;
inline constexpr uint32_t kFrameIds = 2;  // bottom (outermost) frame first
}  // namespace Callstack

namespace ChromeEventBundle {
inline constexpr uint32_t kMetadata = 2;
}
namespace ChromeMetadata {
inline constexpr uint32_t kName = 1;
inline constexpr uint32_t kStringValue = 2;
inline constexpr uint32_t kIntValue = 4;
inline constexpr uint32_t kJsonValue = 5;
}  // namespace ChromeMetadata

}  // namespace cutrace::pf
