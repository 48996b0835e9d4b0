mod goal;
mod harness;
mod mock_server;
mod plan;
mod providers;
mod runtime;
