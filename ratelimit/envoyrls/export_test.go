package envoyrls

// HeadersToAdd is headersToAdd, for the tests.
var HeadersToAdd = headersToAdd
