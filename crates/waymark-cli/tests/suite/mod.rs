mod cli;
mod crash;
mod goal;
mod output;
mod plan;
mod red_team;
mod support;
mod upgrade;
