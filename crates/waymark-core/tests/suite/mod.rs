mod harness;
mod mock_server;
mod providers;
mod runtime;
