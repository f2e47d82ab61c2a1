package transport

// The batch format, for the tests of package transport_test, which drive
// a real server with it.
var (
	AppendBatchRequest = appendBatchRequest
	ParseBatchResponse = parseBatchResponse
)

// BatchContentType is the Content-Type of a batch.
const BatchContentType = batchContentType
