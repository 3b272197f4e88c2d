// The sentences of problems.hpp: one table per enum, in the enum's order.
#include "proxy/session/exchange/h2/problems.hpp"

namespace sandgate::session::exchange::h2 {

std::string_view describe(ErrorCode code) {
  switch (code) {
    case ErrorCode::no_error:
      return "NO_ERROR";
    case ErrorCode::protocol_error:
      return "PROTOCOL_ERROR";
    case ErrorCode::internal_error:
      return "INTERNAL_ERROR";
    case ErrorCode::flow_control_error:
      return "FLOW_CONTROL_ERROR";
    case ErrorCode::settings_timeout:
      return "SETTINGS_TIMEOUT";
    case ErrorCode::stream_closed:
      return "STREAM_CLOSED";
    case ErrorCode::frame_size_error:
      return "FRAME_SIZE_ERROR";
    case ErrorCode::refused_stream:
      return "REFUSED_STREAM";
    case ErrorCode::cancel:
      return "CANCEL";
    case ErrorCode::compression_error:
      return "COMPRESSION_ERROR";
    case ErrorCode::connect_error:
      return "CONNECT_ERROR";
    case ErrorCode::enhance_your_calm:
      return "ENHANCE_YOUR_CALM";
    case ErrorCode::inadequate_security:
      return "INADEQUATE_SECURITY";
    case ErrorCode::http_1_1_required:
      return "HTTP_1_1_REQUIRED";
  }
  return "an unknown HTTP/2 error code";
}

std::string_view describe(ConnectionError error) {
  switch (error) {
    case ConnectionError::none:
      return "no error";
    case ConnectionError::bad_preface:
      return "the client did not begin with HTTP/2's preface";
    case ConnectionError::protocol:
      return "the peer broke the HTTP/2 protocol";
    case ConnectionError::flow_control:
      return "the peer sent more than its flow-control window";
    case ConnectionError::compression:
      return "the peer's HPACK header block did not decode";
    case ConnectionError::frame_size:
      return "the peer sent a frame of a size not allowed";
    case ConnectionError::too_many_settings:
      return "the peer sent a SETTINGS frame with too many entries";
    case ConnectionError::continuation_flood:
      return "the peer sent too many CONTINUATION frames for one header block";
    case ConnectionError::unread_acknowledgements:
      return "the peer sent PING or SETTINGS frames without reading the acknowledgements";
    case ConnectionError::control_frame_flood:
      return "the peer sent PING or SETTINGS frames too fast";
    case ConnectionError::empty_frame_flood:
      return "the peer sent too many empty DATA frames in a row";
    case ConnectionError::rapid_reset:
      return "the peer reset streams too fast (rapid reset)";
    case ConnectionError::internal:
      return "the gate failed (out of memory or a fault of its own)";
  }
  return "an unknown connection error";
}

std::string_view describe(StreamProblem problem) {
  switch (problem) {
    case StreamProblem::none:
      return "no problem";
    case StreamProblem::forbidden_field:
      return "a header field HTTP/2 forbids (connection-specific, te other than trailers, an "
             "uppercase name, or a pseudo-header repeated, unknown or misplaced)";
    case StreamProblem::invalid_field_name:
      return "a header field name with a character outside the token set";
    case StreamProblem::invalid_field_value:
      return "a header field value with a control character or surrounding whitespace";
    case StreamProblem::missing_pseudo_header:
      return "a pseudo-header field the message needs is missing";
    case StreamProblem::invalid_pseudo_header:
      return "a pseudo-header field's value is malformed";
    case StreamProblem::authority_invalid:
      return "the authority is not host[:port] (userinfo or a character not allowed)";
    case StreamProblem::host_mismatch:
      return "host differs from :authority";
    case StreamProblem::scheme_mismatch:
      return "the :scheme is not the connection's";
    case StreamProblem::path_invalid:
      return "the :path has a character not allowed (a space, a control character, '#', or a byte "
             "over 0x7e)";
    case StreamProblem::protocol_not_enabled:
      return "a :protocol without extended CONNECT enabled";
    case StreamProblem::trailers_invalid:
      return "trailers that end no stream, or carry a field trailers may not carry";
    case StreamProblem::content_length_mismatch:
      return "the DATA disagrees with content-length";
    case StreamProblem::head_too_large:
      return "the header list is over the limit";
    case StreamProblem::plain_connect:
      return "CONNECT without :protocol (a tunnel inside an inspected connection)";
    case StreamProblem::too_many_open_heads:
      return "the connection's open streams hold too many header bytes already";
    case StreamProblem::trailers_too_large:
      return "the trailer list is over the limit";
    case StreamProblem::held_too_much:
      return "its client did not take the response while the origin connection's other streams "
             "needed room";
    case StreamProblem::stream_protocol_error:
      return "a frame the stream's state does not allow";
    case StreamProblem::stream_flow_control:
      return "more data than the stream's flow-control window";
  }
  return "an unknown stream problem";
}

std::string_view describe(SubmitError error) {
  switch (error) {
    case SubmitError::none:
      return "no error";
    case SubmitError::unknown_stream:
      return "no such open stream";
    case SubmitError::wrong_state:
      return "not in the stream's present state";
    case SubmitError::invalid_head:
      return "a head or trailers the wire may not carry";
    case SubmitError::body_not_allowed:
      return "a body where the message has none (HEAD, 204, 304)";
    case SubmitError::body_exceeds_length:
      return "more body than content-length";
    case SubmitError::body_shorter_than_length:
      return "the body ended before content-length";
    case SubmitError::stream_limit_reached:
      return "the connection's concurrent streams are all in use";
    case SubmitError::connect_protocol_not_supported:
      return "the origin does not support extended CONNECT";
    case SubmitError::going_away:
      return "the connection is going away";
    case SubmitError::connection_ended:
      return "the connection has ended";
  }
  return "an unknown submit error";
}

ErrorCode goaway_code_for(ConnectionError error) {
  switch (error) {
    case ConnectionError::none:
      return ErrorCode::no_error;
    case ConnectionError::bad_preface:
    case ConnectionError::protocol:
      return ErrorCode::protocol_error;
    case ConnectionError::flow_control:
      return ErrorCode::flow_control_error;
    case ConnectionError::compression:
      return ErrorCode::compression_error;
    case ConnectionError::frame_size:
      return ErrorCode::frame_size_error;
    case ConnectionError::too_many_settings:
    case ConnectionError::continuation_flood:
    case ConnectionError::unread_acknowledgements:
    case ConnectionError::control_frame_flood:
    case ConnectionError::empty_frame_flood:
    case ConnectionError::rapid_reset:
      return ErrorCode::enhance_your_calm;
    case ConnectionError::internal:
      return ErrorCode::internal_error;
  }
  return ErrorCode::internal_error;
}

}  // namespace sandgate::session::exchange::h2
