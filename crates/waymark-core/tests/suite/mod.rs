mod extension;
mod goal;
mod harness;
mod mock_server;
mod plan;
mod providers;
mod red_team;
mod runtime;
